"""Static files of the reference browser client (served at /play by the REST face)."""
