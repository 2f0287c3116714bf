"""Maximum-weight matching of maximum cardinality in a general graph.

Edmonds' blossom algorithm in its primal-dual form (Galil's O(n³) organisation): each stage
grows alternating trees from every exposed vertex along tight edges (zero slack), shrinks the
odd cycles it meets into blossoms, and either finds an augmenting path (the matching grows by
one) or changes the dual variables by the largest step that keeps them feasible. A stage that
can neither augment nor move the duals ends the search: no larger matching exists, and the
one found has the greatest weight among the matchings of that size (the duals certify it).

Written for the Swiss pairing's brackets (:mod:`truco_server.leagues.swiss`): small dense
graphs (tens of vertices, most pairs allowed) given as a weight matrix. Everything is a
list indexed by vertex or blossom number, so the inner loop (scanning a vertex's neighbours)
is a few list look-ups per edge. Weights are integers (any size); they are scaled by 4 and
every vertex's dual starts even (slack = dual[x] + dual[y] - 4·w), so all the vertices of
the trees keep one parity, the slack between two S vertices is even and every step of
the duals is an integer.

Numbering: vertices are ``0..n-1``; a non-trivial blossom gets a free number in
``n..2n-1``. A blossom's ``children`` run round its odd cycle from the child holding its
base; ``links[b][i]`` is the edge ``(x, y)`` joining ``children[i]`` (which holds ``x``) to
``children[i + 1]`` (which holds ``y``), the last one closing the cycle. Inside a blossom the
links ``1, 3, 5, ...`` are matched.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

FREE, OUTER, INNER = 0, 1, 2
"""Labels of a top-level blossom in the current stage: not in a tree, S (even), T (odd)."""
_MARK = 4
"""Set on OUTER blossoms while two tree paths are traced to their meeting point."""

Edge = tuple[int, int]


def max_weight_matching(weights: Sequence[Sequence[int | None]]) -> list[int]:
    """``mate[v]`` (``-1`` when ``v`` is left unmatched) of a matching of ``weights`` (a
    symmetric matrix, ``None`` where there is no edge) with as many edges as possible and,
    among those, the greatest total weight."""
    return _Matcher(weights).run()


class _Matcher:
    def __init__(self, weights: Sequence[Sequence[int | None]]) -> None:
        n = self.n = len(weights)
        self.adj: list[list[int]] = [
            [u for u, x in enumerate(row) if x is not None and u != v] for v, row in enumerate(weights)
        ]
        self.w4: list[list[int]] = [[4 * x if x is not None else 0 for x in row] for row in weights]
        edges = sorted(((self.w4[v][u], v, u) for v in range(n) for u in self.adj[v] if v < u), reverse=True)
        top = edges[0][0] // 4 if edges else 0
        self.mate = [-1] * n
        self.top = list(range(n))
        size = 2 * n
        self.parent = [-1] * size
        self.children: list[list[int]] = [[] for _ in range(size)]
        self.links: list[list[Edge]] = [[] for _ in range(size)]
        self.base = list(range(n)) + [-1] * n
        self.dual = [2 * top] * n + [0] * n
        self.spare = list(range(size - 1, n - 1, -1))
        self.label = [FREE] * size
        self.via: list[Edge | None] = [None] * size
        """How a labelled blossom (or vertex) joined its tree: (vertex outside, vertex inside)."""
        self.best: list[Edge | None] = [None] * size
        """For a vertex not in an S-blossom: its least-slack edge (S vertex, it); for an
        S-blossom: its least-slack edge (inside, outside) to another S-blossom."""
        self.bestlist: list[list[Edge] | None] = [None] * size
        self.queue: list[int] = []
        self.greedy_start(edges)

    def greedy_start(self, edges: list[tuple[int, int, int]]) -> None:
        """Do the first stages at once. While every tree is a lone exposed vertex, a stage
        lowers the exposed vertices' common dual until the heaviest edge between two of them
        is tight, and matches it; so, edges taken heaviest first, each edge between two
        exposed vertices is matched with that dual, until lowering the dual that far would
        make the slack of an edge from an exposed vertex to a matched one negative (a stage
        would then grow a tree through the matched vertex instead). The state left is one
        the stages would reach (exposed vertices share one dual, every slack >= 0, matched
        edges tight); :meth:`run` goes on from it."""
        n, w4, adj, dual, mate = self.n, self.w4, self.adj, self.dual, self.mate
        exposed = set(range(n))
        need = dict.fromkeys(exposed, -(1 << 62))
        """Per exposed vertex: the lowest dual that keeps its edges to matched vertices >= 0."""
        d = dual[0] if n else 0
        for w, v, u in edges:
            if v not in exposed or u not in exposed:
                continue
            target = w // 2
            if need and max(need.values()) > target:
                break
            d = target
            mate[v], mate[u] = u, v
            dual[v] = dual[u] = d
            exposed -= {v, u}
            del need[v], need[u]
            for m in (v, u):
                row = w4[m]
                for x in adj[m]:
                    if x in exposed and row[x] - d > need[x]:
                        need[x] = row[x] - d
        for x in exposed:
            dual[x] = d

    # ------------------------------------------------------------------ helpers
    def slack(self, e: Edge) -> int:
        x, y = e
        return self.dual[x] + self.dual[y] - self.w4[x][y]

    def leaves(self, b: int) -> Iterator[int]:
        if b < self.n:
            yield b
            return
        stack = [b]
        while stack:
            c = stack.pop()
            if c < self.n:
                yield c
            else:
                stack.extend(self.children[c])

    def top_level(self) -> list[int]:
        n = self.n
        return [b for b in range(n, 2 * n) if self.parent[b] == -1 and self.base[b] >= 0]

    def child_of(self, b: int, v: int) -> int:
        """The child of blossom ``b`` that holds vertex ``v``."""
        c = v
        while self.parent[c] != b:
            c = self.parent[c]
        return c

    # ------------------------------------------------------------------ the search
    def run(self) -> list[int]:
        n = self.n
        for _ in range(n // 2 + 1):
            self.label = [FREE] * (2 * n)
            self.best = [None] * (2 * n)
            self.bestlist = [None] * (2 * n)
            self.queue = []
            for v in range(n):
                if self.mate[v] == -1 and self.label[self.top[v]] == FREE:
                    self.assign(v, OUTER, -1)
            if not self.stage():
                break
            for b in self.top_level():
                if self.label[b] == OUTER and self.dual[b] == 0:
                    self.expand(b, endstage=True)
        return self.mate

    def stage(self) -> bool:
        """Grow the trees until a path augments the matching (True) or none exists."""
        while True:
            while self.queue:
                if self.scan(self.queue.pop()):
                    return True
            if not self.step_duals():
                return False

    def scan(self, v: int) -> bool:
        """Look at every edge of the S vertex ``v``; True once the matching was augmented."""
        top, dual, label, best = self.top, self.dual, self.label, self.best
        w4 = self.w4
        bv = top[v]
        dv = dual[v]
        row = w4[v]
        for u in self.adj[v]:
            bu = top[u]
            if bu == bv:
                continue
            s = dv + dual[u] - row[u]
            lu = label[bu]
            if s <= 0:
                if lu == FREE:
                    self.assign(u, INNER, v)
                elif lu == OUTER:
                    meet = self.meeting_base(v, u)
                    if meet >= 0:
                        self.add_blossom(meet, v, u)
                        bv = top[v]
                    else:
                        self.augment(v, u)
                        return True
                elif label[u] == FREE:
                    label[u] = INNER
                    self.via[u] = (v, u)
            elif lu == OUTER:
                e = best[bv]
                if e is None or s < dual[e[0]] + dual[e[1]] - w4[e[0]][e[1]]:
                    best[bv] = (v, u)
            elif label[u] == FREE:
                e = best[u]
                if e is None or s < dual[e[0]] + dual[e[1]] - w4[e[0]][e[1]]:
                    best[u] = (v, u)
        return False

    def assign(self, y: int, kind: int, x: int) -> None:
        """Label ``y``'s top blossom ``kind``, reached from ``x`` (``-1``: a tree's root);
        an INNER blossom's base's mate is then labelled OUTER."""
        b = self.top[y]
        edge = None if x < 0 else (x, y)
        self.label[y] = self.label[b] = kind
        self.via[y] = self.via[b] = edge
        self.best[y] = self.best[b] = None
        if kind == OUTER:
            self.queue.extend(self.leaves(b))
        else:
            root = self.base[b]
            self.assign(self.mate[root], OUTER, root)

    def meeting_base(self, v: int, u: int) -> int:
        """Trace the trees of ``v`` and ``u`` upwards in turn: the base where they meet,
        or -1 when they reach two different roots (an augmenting path)."""
        label, top, via = self.label, self.top, self.via
        marked: list[int] = []
        meet = -1
        a, b = v, u
        while a != -1:
            ba = top[a]
            if label[ba] & _MARK:
                meet = self.base[ba]
                break
            marked.append(ba)
            label[ba] |= _MARK
            e = via[ba]
            if e is None:
                a = -1
            else:
                up = via[top[e[0]]]  # the INNER blossom above, and the S vertex above it
                assert up is not None
                a = up[0]
            if b != -1:
                a, b = b, a
        for ba in marked:
            label[ba] = OUTER
        return meet

    def add_blossom(self, meet: int, v: int, u: int) -> None:
        """Shrink the odd cycle closed by the tight edge ``v``-``u`` into a new S-blossom."""
        top, via, parent = self.top, self.via, self.parent
        bb, bv, bu = top[meet], top[v], top[u]
        b = self.spare.pop()
        self.base[b] = meet
        parent[b] = -1
        parent[bb] = b
        side: list[int] = []
        side_links: list[Edge] = []
        while bv != bb:
            parent[bv] = b
            side.append(bv)
            e = via[bv]
            assert e is not None
            side_links.append(e)
            bv = top[e[0]]
        kids = [bb, *reversed(side)]
        links = [*reversed(side_links), (v, u)]
        while bu != bb:
            parent[bu] = b
            kids.append(bu)
            e = via[bu]
            assert e is not None
            links.append((e[1], e[0]))
            bu = top[e[0]]
        self.children[b], self.links[b] = kids, links
        self.label[b] = OUTER
        via[b] = via[bb]
        self.dual[b] = 0
        for x in self.leaves(b):
            if self.label[top[x]] == INNER:
                self.queue.append(x)
            top[x] = b
        self.collect_best(b, kids)

    def collect_best(self, b: int, kids: list[int]) -> None:
        """The new S-blossom's least-slack edge to each other S-blossom (from its children's
        lists, or their vertices' edges), and the least of them."""
        top, label, bestlist = self.top, self.label, self.bestlist
        to: dict[int, tuple[int, Edge]] = {}
        for c in kids:
            listed = bestlist[c]
            candidates = (
                listed if listed is not None else [(x, y) for x in self.leaves(c) for y in self.adj[x]]
            )
            for e in candidates:
                by = top[e[1]]
                if by != b and label[by] == OUTER:
                    s = self.slack(e)
                    old = to.get(by)
                    if old is None or s < old[0]:
                        to[by] = (s, e)
            bestlist[c] = None
            self.best[c] = None
        bestlist[b] = [e for _, e in to.values()]
        self.best[b] = min(to.values())[1] if to else None

    # ------------------------------------------------------------------ the duals
    def step_duals(self) -> bool:
        """Move the duals by the largest feasible step and act on the edge or blossom that
        stopped it; False when nothing bounds the step (the matching is maximum)."""
        n, top, label, best, dual = self.n, self.top, self.label, self.best, self.dual
        delta: int | None = None
        act: tuple[int, int | Edge] = (0, 0)
        for v in range(n):
            e = best[v]
            if e is not None and label[top[v]] == FREE:
                s = self.slack(e)
                if delta is None or s < delta:
                    delta, act = s, (2, e)
        blossoms = self.top_level()
        for b in [*range(n), *blossoms]:
            if b < n and top[b] != b:
                continue
            e = best[b]
            if label[b] == OUTER and e is not None:
                s = self.slack(e) // 2
                if delta is None or s < delta:
                    delta, act = s, (3, e)
        for b in blossoms:
            if label[b] == INNER and (delta is None or dual[b] < delta):
                delta, act = dual[b], (4, b)
        if delta is None:
            return False
        for v in range(n):
            lb = label[top[v]]
            if lb == OUTER:
                dual[v] -= delta
            elif lb == INNER:
                dual[v] += delta
        for b in blossoms:
            if label[b] == OUTER:
                dual[b] += delta
            elif label[b] == INNER:
                dual[b] -= delta
        kind, what = act
        if kind == 4:
            assert isinstance(what, int)
            self.expand(what, endstage=False)
        else:
            assert isinstance(what, tuple)
            self.queue.append(what[0])
        return True

    # ------------------------------------------------------------------ blossoms
    def expand(self, b: int, *, endstage: bool) -> None:
        """Undo blossom ``b``: its children become top-level. Mid-stage (an INNER blossom
        whose dual reached 0) its children are labelled so the tree stays alternating."""
        entry = None if endstage else self.via[b]
        first = -1 if entry is None else self.child_of(b, entry[1])
        kids, links = self.children[b], self.links[b]
        for c in kids:
            self.parent[c] = -1
            if c < self.n:
                self.top[c] = c
            elif endstage and self.dual[c] == 0:
                self.expand(c, endstage=True)
            else:
                for x in self.leaves(c):
                    self.top[x] = c
        if entry is not None and self.label[b] == INNER:
            self.relabel(kids, links, kids.index(first), entry)
        self.label[b] = FREE
        self.via[b] = self.best[b] = self.bestlist[b] = None
        self.children[b], self.links[b] = [], []
        self.base[b] = -1
        self.spare.append(b)

    def relabel(self, kids: list[int], links: list[Edge], j: int, entry: Edge) -> None:
        """Label the children of an expanded INNER blossom: along the even path from the
        entry child ``kids[j]`` to the base child alternately INNER and OUTER, then any
        other child that a tight edge from an S vertex reached."""
        k = len(kids)
        step = -1 if j % 2 == 0 else 1
        on_path = {j}
        frm, into = entry
        i = j
        while i != 0:
            self.assign(into, INNER, frm)
            s = (i + step) % k
            on_path.add(s)
            if step == -1:
                into, frm = links[s - 1]
                i = s - 1
            else:
                frm, into = links[s]
                i = (s + 1) % k
            on_path.add(i)
        c0 = kids[0]
        self.label[into] = self.label[c0] = INNER
        self.via[into] = self.via[c0] = (frm, into)
        self.best[into] = self.best[c0] = None
        for i, c in enumerate(kids):
            if i in on_path or self.label[c] == OUTER:
                continue
            reached = next((x for x in self.leaves(c) if self.label[x] == INNER), -1)
            if reached >= 0:
                e = self.via[reached]
                assert e is not None
                self.assign(reached, INNER, e[0])

    # ------------------------------------------------------------------ augmenting
    def augment(self, v: int, u: int) -> None:
        """Flip the matching along the path root ... v - u ... root."""
        top, via, mate = self.top, self.via, self.mate
        for s, j in ((v, u), (u, v)):
            while True:
                bs = top[s]
                if bs >= self.n:
                    self.rebase(bs, s)
                mate[s] = j
                e = via[bs]
                if e is None:
                    break
                bt = top[e[0]]
                up = via[bt]
                assert up is not None
                x, y = up
                if bt >= self.n:
                    self.rebase(bt, y)
                mate[y] = x
                s, j = x, y

    def rebase(self, b: int, v: int) -> None:
        """Make ``v`` the base of blossom ``b``, flipping the matched links on the even path
        from its child to the base child."""
        c = self.child_of(b, v)
        if c >= self.n:
            self.rebase(c, v)
        kids, links = self.children[b], self.links[b]
        k = len(kids)
        i = kids.index(c)
        flip = range(i - 2, -1, -2) if i % 2 == 0 else range(i + 1, k, 2)
        for m in flip:
            x, y = links[m]
            a, z = kids[m], kids[(m + 1) % k]
            if a >= self.n:
                self.rebase(a, x)
            if z >= self.n:
                self.rebase(z, y)
            self.mate[x], self.mate[y] = y, x
        self.children[b] = kids[i:] + kids[:i]
        self.links[b] = links[i:] + links[:i]
        self.base[b] = v
