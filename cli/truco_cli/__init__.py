"""The ``truco`` command: the one owner of its parser and subcommands.

It sits above every other part (engine, contract, server, clients, tools) and imports them
statically. The server and the tools need the server's dependencies; in a client-only install
their subcommands are still listed and say how to get them (:mod:`truco_cli.optional`).
"""
