package sluice.it;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * The producer of a failover drill: sends continuously until told to stop and prints, for every
 * message, whether the broker stored it.
 *
 * <pre>
 * DrillProducer --namesrv 127.0.0.1:9876 --topic T [--group G] [--mode sync|async]
 *               [--max-in-flight 32] [--interval-ms 0] [--fail-pause-ms 20] [--max-count 0]
 *               [--send-timeout-ms 1000] [--retries 2] [--poll-namesrv-ms 1000]
 *               [--body-size 0] [--stop-file PATH] [--timeout-ms 600000]
 * </pre>
 *
 * <p>Message i (from 0) has body {@code drill-<i>} and tag {@code drill}; with {@code --body-size N}
 * (larger than that) the body is {@code drill-<i>-} followed by letters up to N bytes, the letter at
 * byte k being {@code 'a' + (i + 7k) mod 26}, so a reader can recompute every byte of every body
 * from its index and tell a corrupt one (integration-tests/src/drill.rs, {@code expected_body}). The client polls the
 * name server every {@code --poll-namesrv-ms} (RocketMQ's {@code pollNameServerInterval}, 30 s by
 * default), so it learns a new master quickly; a send that finds no route (the master is gone, no
 * new one yet) fails at once and the next one looks the route up again. While the latest answer
 * is a failure (async: the latest callback) the producer pauses {@code --fail-pause-ms} between
 * sends so an outage does not print thousands of lines.
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * STARTED &lt;group&gt; &lt;nowMs&gt;
 * ACK &lt;uniqMsgId&gt; &lt;status&gt; &lt;sentAtMs&gt; &lt;ackAtMs&gt; i=&lt;i&gt; q=&lt;queueId&gt; off=&lt;queueOffset&gt; oid=&lt;offsetMsgId&gt;
 * FAIL &lt;i&gt; &lt;uniqMsgId|-&gt; &lt;sentAtMs&gt; &lt;failAtMs&gt; &lt;exception&gt;
 * OK sent=&lt;n&gt; send_ok=&lt;n&gt; stored_not_ok=&lt;n&gt; failed=&lt;n&gt;    exit 0
 * </pre>
 *
 * {@code ACK} is printed for every send the broker answered as stored: {@code status} is the
 * client's {@code SendStatus}. Only {@code SEND_OK} means "stored as durably as configured" (for a
 * SYNC_MASTER: on the slave too); {@code FLUSH_DISK_TIMEOUT}, {@code FLUSH_SLAVE_TIMEOUT} and
 * {@code SLAVE_NOT_AVAILABLE} mean stored on the master only (the Java client returns them as
 * results, not exceptions). A strict drill counts only SEND_OK as acknowledged and reports the
 * others separately. {@code FAIL} is a send that threw (after the client's own retries); its
 * message may still have been stored (the answer was lost), so its unique id — set by the client
 * on the message once a broker was chosen, {@code -} before that — is printed too. Times are
 * {@code System.currentTimeMillis()}. {@code offsetMsgId} is the broker's id of the stored record (hex: store
 * host IPv4, port, CommitLog offset), so the drill can tell which broker of the pair stored it.
 *
 * <p>Stops when {@code --stop-file} exists, after {@code --max-count} messages, or on SIGTERM;
 * async sends still in flight are awaited (up to four send timeouts) before the summary line.
 */
public final class DrillProducer {
    private static final String USAGE = "--namesrv HOST:PORT --topic TOPIC [--group G] [--mode sync|async]"
            + " [--max-in-flight N] [--interval-ms MS] [--fail-pause-ms MS] [--max-count N]"
            + " [--send-timeout-ms MS] [--retries N] [--poll-namesrv-ms MS] [--body-size N] [--stop-file PATH]"
            + " [--timeout-ms MS]";

    /** The property RocketMQ keeps the client's unique message id in (MessageConst, both versions). */
    private static final String UNIQ_KEY = "UNIQ_KEY";

    private final AtomicLong sendOk = new AtomicLong();
    private final AtomicLong storedNotOk = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private volatile boolean stopRequested;
    /** Set by a failed send (async: by its callback), cleared by a stored one: the loop pauses. */
    private volatile boolean lastFailed;
    private final CountDownLatch stopLatch = new CountDownLatch(1);

    private DrillProducer() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "group", "mode", "max-in-flight", "interval-ms", "fail-pause-ms",
                        "max-count", "send-timeout-ms", "retries", "poll-namesrv-ms", "body-size", "stop-file",
                        "timeout-ms"},
                    new String[] {});
            args.required("namesrv");
            args.required("topic");
            String mode = args.get("mode", "sync");
            if (!mode.equals("sync") && !mode.equals("async")) {
                throw new Args.UsageException("--mode wants sync or async, got " + mode);
            }
            if (args.getInt("max-in-flight", 32) < 1) {
                throw new Args.UsageException("--max-in-flight wants a positive number");
            }
            if (args.getInt("body-size", 0) < 0) {
                throw new Args.UsageException("--body-size wants a number >= 0");
            }
        } catch (Args.UsageException e) {
            Harness.usage("DrillProducer", e.getMessage(), USAGE);
            return;
        }
        Harness.init("DrillProducer", args.getLong("timeout-ms", 600_000));
        DrillProducer drill = new DrillProducer();
        Harness.Termination termination = Harness.onSigterm(drill::requestStop);
        termination.exit(drill.run(args));
    }

    private void requestStop() {
        stopRequested = true;
        stopLatch.countDown();
    }

    private boolean stopFileExists(Path stopFile) {
        return stopFile != null && Files.exists(stopFile);
    }

    /** Sleeps up to {@code ms}, waking early on a stop request. */
    private void pause(long ms) throws InterruptedException {
        if (ms > 0) {
            stopLatch.await(ms, TimeUnit.MILLISECONDS);
        }
    }

    private int run(Args args) {
        String topic = args.required("topic");
        String group = args.get("group", "sluice_drill_producer");
        boolean async = args.get("mode", "sync").equals("async");
        int maxInFlight = args.getInt("max-in-flight", 32);
        long intervalMs = args.getLong("interval-ms", 0);
        long failPauseMs = args.getLong("fail-pause-ms", 20);
        long maxCount = args.getLong("max-count", 0);
        int sendTimeoutMs = args.getInt("send-timeout-ms", 1_000);
        int bodySize = args.getInt("body-size", 0);
        String stopFileArg = args.get("stop-file", null);
        Path stopFile = stopFileArg == null ? null : Path.of(stopFileArg);

        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(args.required("namesrv"));
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("drill-producer-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout(sendTimeoutMs);
        producer.setRetryTimesWhenSendFailed(args.getInt("retries", 2));
        producer.setRetryTimesWhenSendAsyncFailed(args.getInt("retries", 2));
        producer.setPollNameServerInterval(args.getInt("poll-namesrv-ms", 1_000));
        try {
            producer.start();
        } catch (Exception e) {
            Harness.out.println("ERR start " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("STARTED " + group + " " + System.currentTimeMillis());
        Semaphore inFlight = new Semaphore(maxInFlight);
        long sent = 0;
        try {
            for (long i = 0; maxCount == 0 || i < maxCount; i++) {
                if (stopRequested || stopFileExists(stopFile)) {
                    break;
                }
                Message msg = new Message(topic, "drill", body(i, bodySize));
                sent++;
                if (async) {
                    sendAsync(producer, msg, i, sendTimeoutMs, inFlight);
                } else {
                    sendSync(producer, msg, i);
                }
                pause(lastFailed ? Math.max(intervalMs, failPauseMs) : intervalMs);
            }
            if (async && !inFlight.tryAcquire(maxInFlight, 4L * sendTimeoutMs + 5_000, TimeUnit.MILLISECONDS)) {
                Harness.out.println("ERR async sends still in flight: " + (maxInFlight - inFlight.availablePermits()));
                return Harness.EXIT_FAIL;
            }
        } catch (InterruptedException e) {
            Harness.out.println("ERR interrupted");
            return Harness.EXIT_FAIL;
        } finally {
            producer.shutdown();
        }
        Harness.out.println("OK sent=" + sent + " send_ok=" + sendOk.get() + " stored_not_ok=" + storedNotOk.get()
                + " failed=" + failed.get());
        return Harness.EXIT_OK;
    }

    /** The body of message {@code i} (see the class docs). */
    static byte[] body(long i, int size) {
        byte[] head = ("drill-" + i).getBytes(StandardCharsets.UTF_8);
        if (size <= head.length + 1) {
            return head;
        }
        byte[] b = new byte[size];
        System.arraycopy(head, 0, b, 0, head.length);
        b[head.length] = '-';
        for (int k = head.length + 1; k < size; k++) {
            b[k] = (byte) ('a' + (int) ((i + 7L * k) % 26));
        }
        return b;
    }

    private void sendSync(DefaultMQProducer producer, Message msg, long i) {
        long sentAt = System.currentTimeMillis();
        try {
            SendResult r = producer.send(msg);
            acked(r, i, sentAt);
        } catch (Exception e) {
            sendFailed(msg, i, sentAt, e);
        }
    }

    private void sendAsync(DefaultMQProducer producer, Message msg, long i, int sendTimeoutMs, Semaphore inFlight)
            throws InterruptedException {
        inFlight.acquire();
        long sentAt = System.currentTimeMillis();
        try {
            producer.send(msg, new SendCallback() {
                @Override
                public void onSuccess(SendResult r) {
                    acked(r, i, sentAt);
                    inFlight.release();
                }

                @Override
                public void onException(Throwable e) {
                    sendFailed(msg, i, sentAt, e);
                    inFlight.release();
                }
            }, sendTimeoutMs);
        } catch (Exception e) {
            inFlight.release();
            sendFailed(msg, i, sentAt, e);
        }
    }

    private void acked(SendResult r, long i, long sentAt) {
        long ackAt = System.currentTimeMillis();
        lastFailed = false;
        String status = r.getSendStatus().toString();
        if (status.equals("SEND_OK")) {
            sendOk.incrementAndGet();
        } else {
            storedNotOk.incrementAndGet();
        }
        Harness.out.println("ACK " + r.getMsgId() + " " + status + " " + sentAt + " " + ackAt + " i=" + i
                + " q=" + (r.getMessageQueue() == null ? -1 : r.getMessageQueue().getQueueId())
                + " off=" + r.getQueueOffset() + " oid=" + r.getOffsetMsgId());
    }

    private void sendFailed(Message msg, long i, long sentAt, Throwable e) {
        long failAt = System.currentTimeMillis();
        lastFailed = true;
        failed.incrementAndGet();
        String id = msg.getProperty(UNIQ_KEY);
        Harness.out.println("FAIL " + i + " " + (id == null ? "-" : id) + " " + sentAt + " " + failAt + " "
                + Harness.describe(e));
    }
}
