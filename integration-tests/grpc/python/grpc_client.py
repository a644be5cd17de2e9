"""One case of the gRPC proxy tests (integration-tests/tests/grpc_proxy.rs) on Apache's official
Python gRPC SDK (rocketmq-python-client from PyPI), as ../README.md describes them for every SDK:
the same arguments, messages and result lines.

    grpc_client.py CASE --endpoint 127.0.0.1:PORT --topic T --group G [--timeout-ms 120000] [--consume no] [--access-key AK --secret-key SK]
      CASE: normal | fifo | delay | transaction | simple | push | priority

--consume no: the cases that send and then consume (normal, fifo, delay) only send, and print
"OK sent=N" once every send succeeded (the test reads the messages back).

Exit 0 once the case saw everything it waits for (an OK line), 1 on failure (ERR ...), 2 on a
usage error, 124 when the watchdog fires.
"""

import argparse
import logging
import os
import sys
import threading
import time

# The SDK logs under ~/logs/rocketmq_python (the test gives each run its own HOME), never stdout.

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,
                      MessageListener, Producer, PushConsumer, SimpleConsumer, TransactionChecker,
                      TransactionResolution)

# Its errors (a refused call's status among them: "query topic raise exception, ...") also go
# to stderr, which a failed test shows; stdout stays the result lines.
_sdk_errors = logging.StreamHandler(sys.stderr)
_sdk_errors.setLevel(logging.ERROR)
logging.getLogger("rocketmq-python-client").addHandler(_sdk_errors)

INVISIBLE_S = 10  # the proxy's minimum invisible duration for a receive
WAIT_S = 60  # how long a case waits for its deliveries
_out = threading.Lock()


def line(text):
    with _out:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def now_ms():
    return int(time.time() * 1000)


def leave(code):
    sys.stdout.flush()
    # The SDK's threads are not all daemons: leave without them.
    os._exit(code)


class Case:
    def __init__(self, args):
        credentials = Credentials(args.access_key or "", args.secret_key or "")
        self.config = ClientConfiguration(args.endpoint, credentials, request_timeout=10)
        self.topic = args.topic
        self.group = args.group
        self.consume = args.consume == "yes"

    # ----------------------------------------------------------------------------- the parts

    def producer(self, checker=None):
        p = Producer(self.config, (self.topic,), checker=checker)
        p.startup()
        return p

    def message(self, body):
        m = Message()
        m.topic = self.topic
        m.body = body.encode("utf-8")
        return m

    def send(self, p, i, m, extra=""):
        r = p.send(m)
        line(f"SENT {i} {r.message_id} at={now_ms()}{extra}")

    def simple_consumer(self, tag):
        c = SimpleConsumer(self.config, self.group, {self.topic: FilterExpression(tag)},
                           await_duration=5)
        c.startup()
        return c

    @staticmethod
    def receive(c):
        try:
            return c.receive(16, INVISIBLE_S) or []
        except Exception as e:  # "no message": none; anything else: RECVERR (the test fails)
            if "MESSAGE_NOT_FOUND" not in str(e):
                line(f"RECVERR {type(e).__name__}: {str(e).replace(chr(10), ' ')}")
                time.sleep(0.2)
            return []

    @staticmethod
    def ack(c, m):
        c.ack(m)
        line(f"ACK {m.body.decode('utf-8')} {m.message_id}")

    def consume_all(self, bodies, tag, linger_s=0.0):
        """Receives and acks (in order) until every body came, then linger_s more."""
        if not self.consume:
            line(f"OK sent={len(bodies)}")
            return True
        c = self.simple_consumer(tag)
        got = set()
        try:
            deadline = time.time() + WAIT_S
            while not set(bodies) <= got and time.time() < deadline:
                for m in self.receive(c):
                    got.add(m.body.decode("utf-8"))
                    recv(m)
                    self.ack(c, m)
            until = time.time() + linger_s
            while time.time() < until:
                for m in self.receive(c):
                    got.add(m.body.decode("utf-8"))
                    recv(m)
                    self.ack(c, m)
        finally:
            c.shutdown()
        missing = sorted(set(bodies) - got)
        if missing:
            line(f"ERR missing={missing}")
            return False
        line(f"OK received={len(got)}")
        return True

    # ----------------------------------------------------------------------------- the cases

    def normal(self):
        """8 messages with a tag, keys and a property; a SimpleConsumer receives and acks them."""
        p = self.producer()
        bodies = []
        for i in range(8):
            body = f"normal-{i}"
            m = self.message(body)
            m.tag = "TagA"
            m.keys = f"key-{i}"
            m.add_property("idx", str(i))
            self.send(p, i, m)
            bodies.append(body)
        p.shutdown()
        return self.consume_all(bodies, "TagA")

    def fifo(self):
        """3 message groups of 4, interleaved; received and acked in the order given."""
        p = self.producer()
        bodies = []
        i = 0
        for j in range(4):
            for g in range(3):
                body = f"fifo-{g}-{j}"
                m = self.message(body)
                m.message_group = f"group-{g}"
                self.send(p, i, m)
                i += 1
                bodies.append(body)
        p.shutdown()
        return self.consume_all(bodies, "*")

    def priority(self):
        """A backlog of 16 priority messages, 4 rounds of priorities 0..3 (`prio-P-R`), sent
        before the SimpleConsumer starts; it receives and acks them all (the test checks that
        the higher priorities came first)."""
        p = self.producer()
        bodies = []
        i = 0
        for r in range(4):
            for prio in range(4):
                body = f"prio-{prio}-{r}"
                m = self.message(body)
                m.priority = prio
                self.send(p, i, m, f" priority={prio}")
                i += 1
                bodies.append(body)
        p.shutdown()
        return self.consume_all(bodies, "*")

    def delay(self):
        """3 messages due 4, 5 and 6 s after the send."""
        p = self.producer()
        bodies = []
        for i in range(3):
            body = f"delay-{i}"
            # This SDK takes whole seconds (a protobuf Timestamp's seconds).
            due_s = int(time.time()) + 4 + i
            due = due_s * 1000
            m = self.message(body)
            m.delivery_timestamp = due_s
            self.send(p, i, m, f" deliver={due}")
            bodies.append(body)
        p.shutdown()
        return self.consume_all(bodies, "*")

    def transaction(self):
        """6 messages: i%3 == 0 committed, 1 rolled back, 2 left open; a check-back answers the
        local outcome (COMMIT for the open ones); the consumer receives the 4 committed ones and
        lingers 3 s."""
        checked = set()

        class Checker(TransactionChecker):
            def check(self, message):
                body = message.body.decode("utf-8")
                checked.add(body)
                rollback = body.endswith(("-1", "-4"))
                line(f"CHECK {body} {message.message_id} answer={'ROLLBACK' if rollback else 'COMMIT'}")
                return TransactionResolution.ROLLBACK if rollback else TransactionResolution.COMMIT

        p = self.producer(Checker())
        try:
            expected = []
            for i in range(6):
                body = f"tx-{i}"
                tx = p.begin_transaction()
                r = p.send(self.message(body), tx)
                local = ("commit", "rollback", "unknown")[i % 3]
                line(f"SENT {i} {r.message_id} at={now_ms()} tx={local}")
                if i % 3 == 0:
                    tx.commit()
                elif i % 3 == 1:
                    tx.rollback()
                if i % 3 != 1:
                    expected.append(body)
            ok = self.consume_all(expected, "*", 3.0)
            deadline = time.time() + WAIT_S
            while not {"tx-2", "tx-5"} <= checked and time.time() < deadline:
                time.sleep(0.1)
            if not {"tx-2", "tx-5"} <= checked:
                line(f"ERR checked={sorted(checked)} expected tx-2 and tx-5")
                return False
            return ok
        finally:
            p.shutdown()

    def simple(self):
        """3 messages received: simple-0 acked, simple-1's invisible duration changed to 2 s,
        simple-2 left alone; both come back (attempt 2) and are acked; then 2 s more."""
        p = self.producer()
        for i in range(3):
            self.send(p, i, self.message(f"simple-{i}"))
        p.shutdown()
        c = self.simple_consumer("*")
        try:
            seen = {}
            deadline = time.time() + WAIT_S
            linger_until = None
            while time.time() < deadline and (linger_until is None or time.time() < linger_until):
                for m in self.receive(c):
                    body = m.body.decode("utf-8")
                    recv(m)
                    seen[body] = seen.get(body, 0) + 1
                    n = seen[body]
                    if body == "simple-1" and n == 1:
                        c.change_invisible_duration(m, 2)
                        line(f"CHANGE {body} {m.message_id} ms=2000 at={now_ms()}")
                    elif body == "simple-2" and n == 1:
                        line(f"SKIP {body} {m.message_id}")
                    else:
                        self.ack(c, m)
                if (linger_until is None and seen.get("simple-0", 0) >= 1
                        and seen.get("simple-1", 0) >= 2 and seen.get("simple-2", 0) >= 2):
                    linger_until = time.time() + 2
            if linger_until is None:
                line(f"ERR seen={dict(sorted(seen.items()))}")
                return False
            line(f"OK seen={dict(sorted(seen.items()))}")
            return True
        finally:
            c.shutdown()

    def push(self):
        """A PushConsumer started first; 5 messages; push-0 fails its first delivery and must
        come back; every message consumed successfully once."""
        done = set()
        failed = set()
        lock = threading.Lock()

        class Listener(MessageListener):
            def consume(self, message):
                body = message.body.decode("utf-8")
                recv(message)
                with lock:
                    if body == "push-0" and body not in failed:
                        failed.add(body)
                        line(f"FAIL {body} {message.message_id}")
                        return ConsumeResult.FAILURE
                    done.add(body)
                return ConsumeResult.SUCCESS

        c = PushConsumer(self.config, self.group, Listener(), {self.topic: FilterExpression()})
        c.startup()
        try:
            line(f"STARTED {self.group}")
            time.sleep(2)
            p = self.producer()
            for i in range(5):
                self.send(p, i, self.message(f"push-{i}"))
            p.shutdown()
            deadline = time.time() + WAIT_S
            while time.time() < deadline:
                with lock:
                    n = len(done)
                if n >= 5:
                    time.sleep(2)
                    line(f"OK consumed={n}")
                    return True
                time.sleep(0.1)
            line(f"ERR consumed={len(done)} expected=5")
            return False
        finally:
            c.shutdown()


def recv(m):
    """`RECV <body> <msgId> attempt= tag= keys= group= deliver= born= recv= topic= idx= priority=`"""
    keys = ",".join(m.keys) if m.keys else "-"
    props = m.properties or {}
    line(f"RECV {m.body.decode('utf-8')} {m.message_id} attempt={m.delivery_attempt}"
         f" tag={m.tag or '-'} keys={keys} group={m.message_group or '-'}"
         f" deliver={m.delivery_timestamp or '-'} born={m.born_timestamp or '-'}"
         f" recv={now_ms()} topic={m.topic} idx={props.get('idx', '-')}"
         f" priority={'-' if m.priority is None else m.priority}")


def main():
    if len(sys.argv) < 2:
        line("ERR usage: missing CASE")
        leave(2)
    kase = sys.argv[1]
    parser = argparse.ArgumentParser(prog="grpc_client.py", add_help=False)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--timeout-ms", type=int, default=120000)
    parser.add_argument("--consume", choices=("yes", "no"), default="yes")
    parser.add_argument("--access-key")
    parser.add_argument("--secret-key")
    try:
        args = parser.parse_args(sys.argv[2:])
    except SystemExit:
        line("ERR usage: bad arguments")
        leave(2)
    if not args.endpoint.startswith("127."):
        line("ERR usage: --endpoint must be a loopback address")
        leave(2)

    def watchdog():
        time.sleep(args.timeout_ms / 1000)
        line(f"ERR timeout after {args.timeout_ms}ms")
        leave(124)

    threading.Thread(target=watchdog, daemon=True).start()
    case = Case(args)
    run = {"normal": case.normal, "fifo": case.fifo, "delay": case.delay,
           "transaction": case.transaction, "simple": case.simple, "push": case.push,
           "priority": case.priority}.get(kase)
    if run is None:
        line(f"ERR usage: unknown case {kase}")
        leave(2)
    try:
        leave(0 if run() else 1)
    except Exception as e:  # one line, as the other SDKs' programs print it
        line(f"ERR {type(e).__name__}: {str(e).replace(chr(10), ' ')}")
        leave(1)


if __name__ == "__main__":
    main()
