"""The follow loop's decisions, from plain numbers: which versions to read as the table's head
moves, in which chunks given the history's row estimates and the learned row width, when to
plan again, when to stop (--until-version, or a stop while waiting for new versions), and the
first chunk of a start, small."""

from collections.abc import Iterator, Mapping

from producer.follow.course import MIN_ROW_BOUND, ROW_OVERHEAD, Course, RowWidth, Span, spans
from producer.follow.plan import Chunk

MIB = 2**20


def course(start: int = 0, until: int | None = None, max_rows: int = 100) -> Course:
    return Course(start, until, max_versions=10, width=RowWidth(max_rows, 128 * MIB))


def read_all(c: Course, span: Span, estimates: Mapping[int, int | None]) -> list[Chunk]:
    """Every chunk of span, each read before the next is asked for, as follow() reads them."""
    return list(c.chunks(span, estimates))


def test_the_span_runs_from_the_next_version_to_the_head() -> None:
    c = course(start=3)

    assert c.span(head=7) == Span(3, 7, head=7)


def test_nothing_new_at_the_head_is_no_span() -> None:
    assert course(start=8).span(head=7) is None


def test_until_version_caps_the_span_and_ends_the_course_once_read() -> None:
    c = course(start=0, until=4)
    span = c.span(head=9)
    assert span == Span(0, 4, head=9)

    read_all(c, span, {v: 10 for v in range(5)})

    assert c.finished
    assert c.span(head=12) is None


def test_each_chunk_read_moves_the_next_version_past_it() -> None:
    c = course(max_rows=100)
    chunks = c.chunks(Span(0, 3, head=3), {0: 60, 1: 60, 2: 60, 3: 60})

    assert next(chunks) == Chunk(0, 0)
    assert c.next_version == 0  # not read yet: resuming marks it read
    assert next(chunks) == Chunk(1, 1)
    assert c.next_version == 1


def test_a_chunk_left_unread_is_read_again() -> None:
    c = course()
    chunks = c.chunks(Span(0, 5, head=5), {v: 60 for v in range(6)})
    next(chunks)  # stopping in the middle of chunk 0: the plan is never resumed

    assert c.next_version == 0
    assert c.span(head=5) == Span(0, 5, head=5)


def test_wider_rows_than_planned_for_end_the_plan_for_a_new_one() -> None:
    c = Course(0, None, max_versions=10, width=RowWidth(max_rows=1_000, max_bytes=100_000))
    c.started = True  # past the start's first chunk, which is planned alone
    estimates = {v: 400 for v in range(10)}
    chunks = c.chunks(Span(0, 9, head=9), estimates)  # width unknown: 2 versions a chunk

    assert next(chunks) == Chunk(0, 1)
    c.width.learn(nbytes=400 * 400, rows=400)  # 400 bytes a change: 250 rows a chunk now
    assert list(chunks) == []  # the plan ends after the chunk read
    replanned = c.span(head=9)
    assert replanned is not None
    assert (replanned.first, replanned.last) == (2, 9)
    assert next(c.chunks(replanned, estimates)) == Chunk(2, 2, slices=2)


def test_the_first_chunk_of_a_start_is_small_then_chunks_grow() -> None:
    c = Course(0, None, max_versions=100, width=RowWidth(max_rows=500_000, max_bytes=128 * MIB))
    c.width.learn(nbytes=100 * 1_000, rows=1_000)  # sampled: these versions are larger
    chunks = read_all(c, Span(0, 99, head=99), {v: 10_000 for v in range(100)})

    assert chunks == [Chunk(0, 4), Chunk(5, 54), Chunk(55, 99)]  # FIRST_CHUNK_ROWS, max_rows


def test_a_start_whose_first_version_is_big_reads_it_whole_first() -> None:
    c = Course(0, None, max_versions=10, width=RowWidth(max_rows=500_000, max_bytes=128 * MIB))
    chunks = c.chunks(Span(0, 2, head=2), {0: 250_000, 1: 250_000, 2: 250_000})

    assert list(chunks) == [Chunk(0, 0), Chunk(1, 2)]


def test_the_first_chunk_follows_what_the_plan_learns_next() -> None:
    c = Course(0, None, max_versions=10, width=RowWidth(max_rows=1_000, max_bytes=100_000))
    chunks = c.chunks(Span(0, 9, head=9), {v: 400 for v in range(10)})

    assert next(chunks) == Chunk(0, 1)
    c.width.learn(nbytes=400 * 400, rows=400)  # 250 rows a chunk: the rest is planned so
    assert next(chunks) == Chunk(2, 2, slices=2)


def test_narrower_rows_than_planned_for_keep_the_plan() -> None:
    c = Course(0, None, max_versions=10, width=RowWidth(max_rows=1_000, max_bytes=100_000))
    c.width.learn(nbytes=400 * 100, rows=400)  # 100 bytes a change: 1,000 rows a chunk
    chunks = c.chunks(Span(0, 5, head=5), {v: 400 for v in range(6)})

    assert next(chunks) == Chunk(0, 1)
    c.width.learn(nbytes=400 * 90, rows=400)
    assert list(chunks) == [Chunk(2, 3), Chunk(4, 5)]


def test_the_width_is_sampled_from_the_first_version_with_changes_until_it_is_known() -> None:
    c = course()
    span = Span(0, 4, head=4)

    assert c.sample_version(span, {0: 0, 1: None, 2: 7_000, 3: 9}) == 2
    assert c.sample_version(span, {0: 0, 1: None}) is None  # nothing says it has changes
    c.width.learn(nbytes=5_000, rows=50)
    assert c.sample_version(span, {0: 0, 2: 7}) is None


def test_a_sample_of_no_rows_teaches_nothing() -> None:
    width = RowWidth(max_rows=500, max_bytes=1_000)
    width.learn(nbytes=0, rows=0)

    assert not width.known
    assert width.rows_per_chunk() == 500


def test_the_learned_width_bounds_a_chunk_in_bytes() -> None:
    width = RowWidth(max_rows=500_000, max_bytes=128 * MIB)
    width.learn(nbytes=12_000 * 1_000, rows=1_000)

    assert width.rows_per_chunk() == 11_184


def test_a_version_the_history_does_not_count_is_sliced_once_counted() -> None:
    c = course(max_rows=100)
    chunk = list(c.chunks(Span(0, 0, head=0), {0: None}))[0]
    assert chunk == Chunk(0, 0, sized=False)

    assert c.sized(chunk, rows=250) == Chunk(0, 0, slices=3)
    assert c.sized(chunk, rows=0) == Chunk(0, 0)
    assert c.sized(Chunk(1, 1, slices=2), rows=999) == Chunk(1, 1, slices=2)  # sized already


def test_following_polls_reads_and_waits_until_stopped() -> None:
    c = course(max_rows=100)
    heads = iter([1, 1, 3, 3])
    waits: list[int] = []
    read: list[Chunk] = []

    def wait() -> bool:
        waits.append(c.next_version)
        return len(waits) == 2  # the second wait is stopped

    for span in spans(c, lambda: next(heads), wait):
        read += c.chunks(span, {v: 10 for v in range(span.first, span.last + 1)})

    assert read == [Chunk(0, 1), Chunk(2, 3)]
    assert waits == [2, 4]  # waited at the head, and stopped while waiting there


def test_following_to_until_version_ends_without_waiting() -> None:
    c = course(until=2)
    heads = iter([1, 5])

    def wait() -> bool:
        raise AssertionError("no wait: the head is past until_version")

    read = [chunk for span in spans(c, lambda: next(heads), wait) for chunk in chunks_of(c, span)]

    assert read == [Chunk(0, 1), Chunk(2, 2)]
    assert c.finished


def chunks_of(c: Course, span: Span) -> Iterator[Chunk]:
    return c.chunks(span, {v: 10 for v in range(span.first, span.last + 1)})


def test_a_span_no_larger_than_a_sample_is_read_whole_without_one() -> None:
    c = course()
    c.started = True  # not a start: see below
    span = Span(0, 3, head=3)

    assert c.sample_version(span, {0: 400, 1: 0, 2: 300, 3: 300}) is None  # 1,000 changes
    assert c.sample_version(span, {0: 400, 1: 0, 2: 300, 3: 301}) == 0
    assert c.sample_version(span, {0: 10, 1: None, 2: 3, 3: 1}) == 0  # 1 may hold any number


def test_a_start_whose_first_changes_fit_a_sample_reads_them_first_without_one() -> None:
    """The first chunk teaches the width, read in the cycle's job: no sample's job."""
    c = Course(0, None, max_versions=10, width=RowWidth(max_rows=500_000, max_bytes=128 * MIB))
    span, estimates = Span(0, 3, head=3), {0: 0, 1: 600, 2: 600, 3: 600}

    assert c.sample_version(span, estimates) is None
    chunks = c.chunks(span, estimates)
    assert next(chunks) == Chunk(0, 1)  # a sample's worth of changes at most
    c.width.learn(nbytes=600 * 100, rows=600)
    assert list(chunks) == [Chunk(2, 3)]
    assert course().sample_version(Span(0, 1, head=1), {0: 1_001, 1: 5}) == 0  # larger: sampled
    narrow = Course(0, None, max_versions=10, width=RowWidth(max_rows=500_000, max_bytes=2**19))
    assert narrow.sample_version(span, estimates) == 1  # a chunk of 512 KiB: sampled first


def test_a_first_chunk_read_alone_is_bounded_per_change_instead_of_sampled() -> None:
    """Each change may take its share of max_bytes, less what it takes beside its key and
    value (ROW_OVERHEAD): the chunk then holds max_bytes at most."""
    c = Course(0, None, max_versions=10, width=RowWidth(max_rows=500_000, max_bytes=128 * MIB))
    span = Span(0, 2, head=2)
    estimates = {0: 0, 1: 250_000, 2: 250_000}  # the first version holding changes, whole

    assert c.sample_version(span, estimates) == 1
    assert c.first_bound(span, estimates) == 128 * MIB // 250_000 - ROW_OVERHEAD
    assert list(c.chunks(span, estimates)) == [Chunk(0, 1), Chunk(2, 2)]
    assert c.first_bound(span, estimates) is None  # started: not a first chunk any more


def test_a_first_chunk_is_sampled_where_a_bound_cannot_hold_it() -> None:
    span = Span(0, 1, head=1)
    wide = Course(0, None, max_versions=10, width=RowWidth(max_rows=1_000, max_bytes=128 * MIB))
    assert wide.first_bound(span, {0: 5_000, 1: 10}) is None  # in slices: each a job
    assert wide.first_bound(span, {0: None, 1: 10}) is None  # not counted
    tight = Course(0, None, max_versions=10, width=RowWidth(max_rows=500_000, max_bytes=MIB))
    assert tight.first_bound(span, {0: 10_000, 1: 10}) is None  # 72 bytes: below MIN_ROW_BOUND
    assert MIB // 10_000 - ROW_OVERHEAD < MIN_ROW_BOUND
    known = course()
    known.width.learn(nbytes=1_000, rows=10)
    assert known.first_bound(span, {0: 50, 1: 10}) is None  # the width is known


def test_a_first_chunk_not_read_is_planned_again_after_a_restart() -> None:
    c = Course(0, None, max_versions=10, width=RowWidth(max_rows=500_000, max_bytes=128 * MIB))
    span, estimates = Span(0, 1, head=1), {0: 60_000, 1: 10}
    chunks = c.chunks(span, estimates)
    assert next(chunks) == Chunk(0, 0)  # its read failed: next_version stays
    c.restart()
    c.width.learn(nbytes=60 * 1_000, rows=1_000)  # sampled since

    assert list(c.chunks(span, estimates)) == [Chunk(0, 0), Chunk(1, 1)]
