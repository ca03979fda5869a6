"""The consumer process: one member of the consumer group for every topic, a Pipeline per
topic on it, one /metrics and /health endpoint, and SIGTERM or SIGINT stopping every
pipeline (each drains and commits what it read).

The member (consumer/group/member.py) polls on a thread of its own; each topic's pipeline
waits for its services on a thread of its own, then joins the member, which subscribes to
it. Cooperative-sticky assignment (consumer/group/kafka.py) moves only the partitions that
change owner, so a topic joining or leaving (starting, stopping on an error, or rebuilt)
takes no partition from another topic.

A topic stopped by an error stops alone: its partitions stay uncommitted, the error is
logged naming the topic, `cdfbridge_consumer_topic_failed{topic}` is 1 and /health answers
503 naming it, while the other topics go on. The process then ends with that error's exit
code (the worst, if several) once the others are done. With one topic, its error is the
process's, raised as it comes.
"""

from __future__ import annotations

import gc
import logging
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from confluent_kafka import KafkaException

from consumer.group.loop import Pipeline
from consumer.group.member import Member
from consumer.group.metrics import Collectors, Metrics
from consumer.group.startup import dead_letters_for, prefetch_of
from consumer.rebuild import auto_rebuild
from consumer.rebuild.generations import Generations
from consumer.settings import ConsumerSettings
from consumer.topics import resolve
from schemas.errors import CdfBridgeError
from services.cli import exit_code
from services.health import serve
from services.kafka_errors import error_of, passing

log = logging.getLogger(__name__)
# The worst exit code first: settings or credentials, then data or tables that need a fix,
# then a service that did not answer.
SEVERITY = (2, 1, 3)


@dataclass(frozen=True)
class Failure:
    """A topic that stopped on an error while the others went on."""

    topic: str
    error: BaseException

    @property
    def code(self) -> int:
        """The exit code services/cli.py gives the error."""
        if isinstance(self.error, CdfBridgeError):
            return exit_code(self.error)
        if isinstance(self.error, KafkaException):
            return 3 if passing(error_of(self.error)) else 1
        return 1


def worst(failures: list[Failure]) -> int:
    """The exit code of the worst failure; 0 without any."""
    return min((f.code for f in failures), key=SEVERITY.index, default=0)


class Consumers:
    """A pipeline per topic on one member, with their metrics on one set of collectors."""

    def __init__(self, each: list[ConsumerSettings], *, until_caught_up: bool = False) -> None:
        self.collectors = Collectors()
        self.dead_letters = dead_letters_for(each[0])  # made at the first dead letter
        self.member = Member(each[0], prefetch_of(each))
        # Every topic's inserts, one at a time per topic (consumer/group/commit.py).
        threads = each[0].consumer.write_threads
        self.writes = ThreadPoolExecutor(threads, thread_name_prefix="clickhouse")
        self.pipelines = [
            Pipeline(
                settings,
                until_caught_up=until_caught_up,
                metrics=Metrics(settings.consumer.topic, self.collectors),
                dead_letters=self.dead_letters,
                member=self.member,
                writes=self.writes,
            )
            for settings in each
        ]
        self.failures: list[Failure] = []
        # rebuild = "auto": one look-out for new generations, for every topic.
        auto = any(s.consumer.rebuild == "auto" for s in each)
        self.generations = Generations(each[0]) if auto else None
        self._lock = threading.Lock()
        # Set by stop(): a pipeline made later (_renew, after an automatic rebuild) starts
        # stopped, so a SIGTERM that came while its topic's table was rebuilt is not lost.
        self._stopping = threading.Event()

    def stop(self) -> None:
        """Stop every pipeline, and any made after. Runs in a signal handler, on the main
        thread, maybe while _renew holds the lock there: it takes no lock."""
        self._stopping.set()
        for pipeline in list(self.pipelines):
            pipeline.stop()

    def run(self) -> list[Failure]:
        """Run every pipeline until stopped (or caught up); returns the topics that stopped
        on an error. A single pipeline runs on the calling thread and raises its error."""
        member = threading.Thread(target=self.member.run, name="group-member")
        member.start()
        try:
            return self._run_all()
        finally:
            self.member.close()
            while member.is_alive():  # wakes up for signals
                member.join(timeout=0.5)
            self.writes.shutdown(wait=True)  # every topic has left: nothing is queued
            if self.generations is not None:
                self.generations.close()

    def _run_all(self) -> list[Failure]:
        if len(self.pipelines) == 1:
            auto_rebuild.serve(self.pipelines[0], self._renew, self.generations)
            return []
        threads = [
            threading.Thread(
                target=self._run_one, args=(p,), name=f"topic-{p.settings.consumer.topic}"
            )
            for p in self.pipelines
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():  # wakes up for signals
                thread.join(timeout=0.5)
        return self.failures

    def _run_one(self, pipeline: Pipeline) -> None:
        topic = pipeline.settings.consumer.topic
        try:
            auto_rebuild.serve(pipeline, self._renew, self.generations)
        except BaseException as exc:  # noqa: BLE001 - kept for the exit code, the rest go on
            pipeline.metrics.failed(exc)
            unexpected = not isinstance(exc, CdfBridgeError | KafkaException)
            log.error(
                "topic stopped; the other topics go on",
                extra={"topic": topic, "error": str(exc)[:500]},
                exc_info=exc if unexpected else None,
            )
            with self._lock:
                self.failures.append(Failure(topic, exc))

    def _renew(self, pipeline: Pipeline) -> Pipeline:
        """A pipeline like `pipeline` (stopped), in its place: stop() reaches the new one."""
        fresh = Pipeline(
            pipeline.settings,
            until_caught_up=pipeline.until_caught_up,
            metrics=pipeline.metrics,
            dead_letters=self.dead_letters,
            member=self.member,
            writes=self.writes,
        )
        with self._lock:
            self.pipelines[self.pipelines.index(pipeline)] = fresh
        if self._stopping.is_set():  # stop() came before it was in the list
            fresh.stop()
        return fresh


def run(settings: ConsumerSettings, *, until_caught_up: bool = False) -> list[Failure]:
    """The consumer process: serve metrics, consume every topic, drain on SIGTERM or SIGINT.
    Returns the topics that stopped on an error (several topics only)."""
    # consume() allocates an object per message: collecting the young generation every
    # 700 allocations (the default) took a fifth of the loop's time; objects are freed by
    # reference counting anyway, the collector only finds cycles.
    gc.set_threshold(100_000, 10, 10)
    consumers = Consumers(resolve(settings), until_caught_up=until_caught_up)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: consumers.stop())
    server = None
    if settings.consumer.metrics_port:
        server = serve(consumers.collectors, settings.consumer.metrics_port)
    try:
        return consumers.run()
    finally:
        if server is not None:
            server.shutdown()
