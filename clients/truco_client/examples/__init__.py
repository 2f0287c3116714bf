"""Example bots for the bot kit (see README "For bot developers")."""
