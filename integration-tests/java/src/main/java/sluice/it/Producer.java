package sluice.it;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Sends N messages: synchronously, asynchronously or oneway, one at a time or in batches, to a
 * queue of the client's choosing or through a {@link MessageQueueSelector} by order key.
 *
 * <pre>
 * Producer --namesrv 127.0.0.1:9876 --topic T --count 10 [--group G] [--mode sync|async|oneway]
 *          [--batch N] [--tag TAG | --tags A,B,C] [--keys] [--keys-prefix K] [--body-prefix B]
 *          [--delay-level L] [--order-keys K] [--send-timeout-ms 3000] [--retries 2]
 *          [--keep-going] [--timeout-ms MS]
 *          [--timer delay-sec=S|delay-ms=MS|deliver-ms=EPOCH_MS|deliver-in=MS [--timer-step N]
 *           [--recall-every N]]
 * </pre>
 *
 * <p>Message i (from 0) has body {@code <body-prefix>-<i>}; tag {@code TAG}, or with {@code --tags}
 * the (i mod n)-th of the list; key {@code <keys-prefix>-<i>} when a prefix or {@code --keys} is
 * given ({@code --keys} alone: prefix {@code key}); delay level L with {@code --delay-level}. With
 * {@code --order-keys K} message i has the order key {@code k-<i mod K>}, is sent to queue
 * {@code floorMod(key.hashCode(), queues)} through a MessageQueueSelector, and carries the user
 * properties {@code ORDER_KEY} and {@code SEQ} (= i) for the orderly consumer. With {@code --batch
 * N} messages go in batches of N ({@code send(Collection)}; sync or async only, no delay level, no
 * order keys). With {@code --timer} every message is a 5.x timer message (see {@link Timer}: the
 * client setter, {@code --timer-step}, and the user properties {@code sluiceDue} / {@code
 * sluiceSent} it carries). With {@code --recall-every N} (sync timers, a 5.3.2+ client) every
 * N-th message (i mod N = 0) is recalled right after its send, through
 * {@code DefaultMQProducer.recallMessage(topic, SendResult.getRecallHandle())}: {@code RECALLED
 * <msgId> <returned id>}, or {@code ERR recall <i> <exception>} (a failure).
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * SENT &lt;msgId&gt; &lt;offsetMsgId&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;sendStatus&gt; i=&lt;i&gt; tag=&lt;t|-&gt; keys=&lt;k|-&gt; okey=&lt;k|-&gt; due=&lt;ms|-&gt;
 * OK sent=&lt;n&gt;                                                                exit 0
 * </pre>
 *
 * one SENT line per message: in send order for sync and oneway, in completion order for async.
 * Oneway sends have no result: {@code SENT <msgId> - -1 -1 ONEWAY ...} (the msgId is the client's
 * unique key, set on the message by the send). For a batch, one line per message of the batch:
 * its unique key, its part of the broker's comma-separated offsetMsgId, and the batch's first
 * queue offset plus its index in the batch. A failed send prints {@code ERR send <i> <exception>}
 * and stops (exit 1), or with {@code --keep-going} goes on and ends with {@code ERR sent=<ok>
 * failed=<n>} (exit 1). A status other than SEND_OK is printed as is and does not count as a
 * failure.
 */
public final class Producer {
    private static final String USAGE = "--namesrv HOST:PORT --topic TOPIC --count N [--group G]"
            + " [--mode sync|async|oneway] [--batch N] [--tag TAG | --tags A,B,C] [--keys] [--keys-prefix K]"
            + " [--body-prefix B] [--delay-level L] [--order-keys K] [--send-timeout-ms MS] [--retries N]"
            + " [--keep-going] [--timeout-ms MS] [--timer KIND=VALUE [--timer-step N] [--recall-every N]]";

    /** The property RocketMQ keeps the client's unique message id in (MessageConst, both versions). */
    private static final String UNIQ_KEY = "UNIQ_KEY";

    /** Picks the queue of an order key: the same key always lands on the same queue. */
    private static final MessageQueueSelector BY_KEY_HASH =
            (mqs, msg, arg) -> mqs.get(Math.floorMod(arg.hashCode(), mqs.size()));

    private Producer() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "count", "group", "tag", "tags", "keys-prefix", "body-prefix",
                        "send-timeout-ms", "retries", "timeout-ms", "mode", "batch", "delay-level", "order-keys",
                        "timer", "timer-step", "recall-every"},
                    new String[] {"keep-going", "keys"});
            args.required("namesrv");
            args.required("topic");
            args.required("count");
            String mode = args.get("mode", "sync");
            if (!mode.equals("sync") && !mode.equals("async") && !mode.equals("oneway")) {
                throw new Args.UsageException("--mode wants sync, async or oneway, got " + mode);
            }
            int batch = args.getInt("batch", 1);
            if (batch < 1) {
                throw new Args.UsageException("--batch wants a positive size, got " + batch);
            }
            if (batch > 1 && (mode.equals("oneway") || args.getInt("delay-level", 0) > 0
                    || args.getInt("order-keys", 0) > 0)) {
                throw new Args.UsageException("--batch works with --mode sync or async only,"
                        + " without --delay-level and --order-keys");
            }
            if (args.get("tag", null) != null && args.get("tags", null) != null) {
                throw new Args.UsageException("give --tag or --tags, not both");
            }
            try {
                Timer.parse(args.get("timer", null), args.getLong("timer-step", 0));
            } catch (IllegalArgumentException e) {
                throw new Args.UsageException(e.getMessage());
            }
        } catch (Args.UsageException e) {
            Harness.usage("Producer", e.getMessage(), USAGE);
            return;
        }
        int count = args.getInt("count", 0);
        long sendTimeoutMs = args.getLong("send-timeout-ms", 3_000);
        Harness.init("Producer", args.getLong("timeout-ms", 30_000 + count * sendTimeoutMs));
        Harness.exit(new Producer().run(args, count, sendTimeoutMs));
    }

    private final AtomicInteger failed = new AtomicInteger();
    /** With {@code --recall-every N}: recall the sync sends with i mod N = 0 (0: none). */
    private int recallEvery;

    private int run(Args args, int count, long sendTimeoutMs) {
        String topic = args.required("topic");
        String mode = args.get("mode", "sync");
        int batchSize = args.getInt("batch", 1);
        String tag = args.get("tag", null);
        String[] tags = args.get("tags", null) == null ? null : args.get("tags", null).split(",");
        String keysPrefix = args.get("keys-prefix", args.flag("keys") ? "key" : null);
        String bodyPrefix = args.get("body-prefix", "msg");
        int delayLevel = args.getInt("delay-level", 0);
        Timer timer = Timer.parse(args.get("timer", null), args.getLong("timer-step", 0));
        int orderKeys = args.getInt("order-keys", 0);
        boolean keepGoing = args.flag("keep-going");
        recallEvery = args.getInt("recall-every", 0);

        DefaultMQProducer producer = new DefaultMQProducer(args.get("group", "sluice_it_producer"));
        producer.setNamesrvAddr(args.required("namesrv"));
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("producer-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout((int) sendTimeoutMs);
        producer.setRetryTimesWhenSendFailed(args.getInt("retries", 2));
        producer.setRetryTimesWhenSendAsyncFailed(args.getInt("retries", 2));
        try {
            producer.start();
        } catch (Exception e) {
            Harness.out.println("ERR start " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        }
        // Async sends in flight: at most this many, all of them awaited before the shutdown.
        final int maxInFlight = 64;
        Semaphore inFlight = new Semaphore(maxInFlight);
        try {
            List<Message> batch = new ArrayList<>();
            List<Integer> batchIndexes = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                Message msg = new Message(topic, (bodyPrefix + "-" + i).getBytes(StandardCharsets.UTF_8));
                String msgTag = tags != null ? tags[i % tags.length] : tag;
                if (msgTag != null) {
                    msg.setTags(msgTag);
                }
                if (keysPrefix != null) {
                    msg.setKeys(keysPrefix + "-" + i);
                }
                if (delayLevel > 0) {
                    msg.setDelayTimeLevel(delayLevel);
                }
                if (timer != null) {
                    try {
                        timer.apply(msg, i, 0);
                    } catch (Exception e) {
                        Harness.out.println("ERR timer " + Harness.describe(e));
                        return Harness.EXIT_FAIL;
                    }
                }
                String orderKey = null;
                if (orderKeys > 0) {
                    orderKey = "k-" + (i % orderKeys);
                    msg.putUserProperty("ORDER_KEY", orderKey);
                    msg.putUserProperty("SEQ", Integer.toString(i));
                }
                if (batchSize > 1) {
                    batch.add(msg);
                    batchIndexes.add(i);
                    if (batch.size() == batchSize || i == count - 1) {
                        boolean ok = sendBatch(producer, mode, batch, batchIndexes, sendTimeoutMs, inFlight);
                        batch = new ArrayList<>();
                        batchIndexes = new ArrayList<>();
                        if (!ok && !keepGoing) {
                            return Harness.EXIT_FAIL;
                        }
                    }
                    continue;
                }
                boolean ok = sendOne(producer, mode, msg, i, orderKey, sendTimeoutMs, inFlight);
                if (!ok && !keepGoing) {
                    return Harness.EXIT_FAIL;
                }
            }
            if (!inFlight.tryAcquire(maxInFlight, sendTimeoutMs * 4 + 10_000, TimeUnit.MILLISECONDS)) {
                Harness.out.println("ERR async sends still in flight: " + (maxInFlight - inFlight.availablePermits()));
                return Harness.EXIT_FAIL;
            }
        } catch (InterruptedException e) {
            Harness.out.println("ERR interrupted");
            return Harness.EXIT_FAIL;
        } finally {
            producer.shutdown();
        }
        int n = failed.get();
        if (n > 0) {
            Harness.out.println("ERR sent=" + (count - n) + " failed=" + n);
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("OK sent=" + count);
        return Harness.EXIT_OK;
    }

    /** Sends one message; false when it failed (async: when it could not even be handed over). */
    private boolean sendOne(DefaultMQProducer producer, String mode, Message msg, int i, String orderKey,
            long sendTimeoutMs, Semaphore inFlight) throws InterruptedException {
        try {
            switch (mode) {
                case "sync": {
                    SendResult r = orderKey != null
                            ? producer.send(msg, BY_KEY_HASH, orderKey, sendTimeoutMs)
                            : producer.send(msg, sendTimeoutMs);
                    printSent(r.getMsgId(), r.getOffsetMsgId(), r.getMessageQueue(), r.getQueueOffset(),
                            r.getSendStatus().toString(), i, msg, orderKey);
                    if (recallEvery > 0 && i % recallEvery == 0) {
                        return recall(producer, msg.getTopic(), r, i);
                    }
                    return true;
                }
                case "oneway": {
                    if (orderKey != null) {
                        producer.sendOneway(msg, BY_KEY_HASH, orderKey);
                    } else {
                        producer.sendOneway(msg);
                    }
                    printSent(msg.getProperty(UNIQ_KEY), "-", null, -1, "ONEWAY", i, msg, orderKey);
                    return true;
                }
                default: {
                    inFlight.acquire();
                    SendCallback callback = new SendCallback() {
                        @Override
                        public void onSuccess(SendResult r) {
                            printSent(r.getMsgId(), r.getOffsetMsgId(), r.getMessageQueue(), r.getQueueOffset(),
                                    r.getSendStatus().toString(), i, msg, orderKey);
                            inFlight.release();
                        }

                        @Override
                        public void onException(Throwable e) {
                            sendFailed(Integer.toString(i), 1, e);
                            inFlight.release();
                        }
                    };
                    try {
                        if (orderKey != null) {
                            producer.send(msg, BY_KEY_HASH, orderKey, callback, sendTimeoutMs);
                        } else {
                            producer.send(msg, callback, sendTimeoutMs);
                        }
                    } catch (Exception e) {
                        inFlight.release();
                        throw e;
                    }
                    return true;
                }
            }
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            sendFailed(Integer.toString(i), 1, e);
            return false;
        }
    }

    /** Sends one batch; false when it failed (async: when it could not even be handed over). */
    private boolean sendBatch(DefaultMQProducer producer, String mode, List<Message> msgs, List<Integer> indexes,
            long sendTimeoutMs, Semaphore inFlight) throws InterruptedException {
        String range = indexes.get(0) + ".." + indexes.get(indexes.size() - 1);
        try {
            if (mode.equals("sync")) {
                printBatch(producer.send(msgs, sendTimeoutMs), msgs, indexes);
                return true;
            }
            inFlight.acquire();
            SendCallback callback = new SendCallback() {
                @Override
                public void onSuccess(SendResult r) {
                    printBatch(r, msgs, indexes);
                    inFlight.release();
                }

                @Override
                public void onException(Throwable e) {
                    sendFailed(range, msgs.size(), e);
                    inFlight.release();
                }
            };
            try {
                producer.send(msgs, callback, sendTimeoutMs);
            } catch (Exception e) {
                inFlight.release();
                throw e;
            }
            return true;
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            sendFailed(range, msgs.size(), e);
            return false;
        }
    }

    /**
     * Recalls the timer message of {@code r} by its recall handle (5.3.2+ API, found by
     * reflection: the 4.9 client has none). False (counted as failed) when it cannot.
     */
    private boolean recall(DefaultMQProducer producer, String topic, SendResult r, int i) {
        try {
            Object handle = r.getClass().getMethod("getRecallHandle").invoke(r);
            if (handle == null) {
                sendFailed("recall " + i, 1, new IllegalStateException("the send answered no recall handle"));
                return false;
            }
            Object id = producer.getClass().getMethod("recallMessage", String.class, String.class)
                    .invoke(producer, topic, handle);
            synchronized (Harness.out) {
                Harness.out.println("RECALLED " + r.getMsgId() + " " + id);
            }
            return true;
        } catch (java.lang.reflect.InvocationTargetException e) {
            failed.incrementAndGet();
            Harness.out.println("ERR recall " + i + " " + Harness.describe(e.getCause()));
            return false;
        } catch (ReflectiveOperationException e) {
            failed.incrementAndGet();
            Harness.out.println("ERR recall " + i + " " + Harness.describe(e));
            return false;
        }
    }

    /** Counts {@code messages} failed sends and prints {@code ERR send <i or first..last> <exception>}. */
    private void sendFailed(String what, int messages, Throwable e) {
        failed.addAndGet(messages);
        Harness.out.println("ERR send " + what + " " + Harness.describe(e));
    }

    /** One SENT line per message of a batch (the batch() call set each message's unique key). */
    private static void printBatch(SendResult r, List<Message> msgs, List<Integer> indexes) {
        String[] offsetIds = r.getOffsetMsgId() == null ? new String[0] : r.getOffsetMsgId().split(",");
        for (int j = 0; j < msgs.size(); j++) {
            Message m = msgs.get(j);
            String offsetId = j < offsetIds.length ? offsetIds[j] : "-";
            printSent(m.getProperty(UNIQ_KEY), offsetId, r.getMessageQueue(), r.getQueueOffset() + j,
                    r.getSendStatus().toString(), indexes.get(j), m, null);
        }
    }

    private static void printSent(String msgId, String offsetMsgId, MessageQueue mq, long queueOffset, String status,
            int i, Message msg, String orderKey) {
        String line = "SENT " + msgId + " " + (offsetMsgId == null ? "-" : offsetMsgId) + " "
                + (mq == null ? -1 : mq.getQueueId()) + " " + queueOffset + " " + status
                + " i=" + i + " tag=" + orDash(msg.getTags()) + " keys=" + orDash(msg.getKeys())
                + " okey=" + orDash(orderKey) + " due=" + orDash(msg.getUserProperty(Timer.DUE));
        synchronized (Harness.out) {
            Harness.out.println(line);
        }
    }

    private static String orDash(String s) {
        return s == null || s.isEmpty() ? "-" : s;
    }
}
