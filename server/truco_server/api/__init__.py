"""The match API layer shared by every transport: typed requests and responses
(:mod:`.types`), authentication (:mod:`.auth`) and the ``truco.v1`` face both the gRPC
servicer and the REST face call (:mod:`.wire`). The operations themselves are
:class:`truco_server.services.matches.MatchService`."""
