"""Event notes are cut as kube-scheduler's truncateMessage cuts them."""

from kubesched.backends.kube.events import NOTE_LIMIT, truncate_note


def test_a_note_within_the_limit_is_kept() -> None:
    assert truncate_note("x" * NOTE_LIMIT) == "x" * NOTE_LIMIT


def test_a_longer_note_ends_in_space_dots_at_exactly_the_limit() -> None:
    note = truncate_note("0/5000 nodes are available: " + "1 node(s) had untolerated taint {k: v}, " * 100)
    assert len(note.encode()) == NOTE_LIMIT and note.endswith(" ...")


def test_the_limit_counts_bytes_as_go_does() -> None:
    note = truncate_note("é" * 600)  # 1,200 bytes: over the limit though 600 characters
    assert note.endswith(" ...") and len(note.encode()) <= NOTE_LIMIT + 2
