"""The four passages and five triples the SiReRAG pool tests share (unit and node conformance)."""

from __future__ import annotations

from support.fakes import make_passage, make_triple

KESTREL = make_passage("Kestrel Observatory", "Oskar Brenner founded the Kestrel Observatory in 1923.")
BRENNER = make_passage("Oskar Brenner", "Oskar Brenner was married to Ilse Brenner, a painter.")
ILSE = make_passage("Ilse Brenner", "Ilse Brenner painted the Harbour at Dusk.")
ROME = make_passage("Rome", "Rome is the capital of Italy.")
TRIPLES = [
    make_triple(KESTREL, "Oskar Brenner", "founded", "Kestrel Observatory"),
    make_triple(KESTREL, "Kestrel Observatory", "founded in", "1923"),
    make_triple(BRENNER, "Oskar  Brenner", "spouse", "Ilse Brenner"),
    make_triple(ILSE, "ilse brenner", "painted", "Harbour at Dusk"),
    make_triple(ROME, "Rome", "capital of", "Italy"),
]
