package sluice.it;

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Sends N transactional messages with {@link TransactionMQProducer} and answers the broker's
 * check-backs.
 *
 * <pre>
 * TxProducer --namesrv 127.0.0.1:9876 --topic T --count 9 [--group G] [--body-prefix tx]
 *            [--check-wait-ms 60000] [--linger-ms 3000] [--heartbeat-ms 1000]
 *            [--send-timeout-ms 3000] [--timeout-ms MS]
 *            [--timer KIND=VALUE [--timer-step N]] [--commit-after-ms 0]
 * </pre>
 *
 * <p>Message i (from 0) has body {@code <body-prefix>-<i>} and the user property {@code TX_I} = i.
 * The local transaction of message i commits when {@code i % 3 == 0}, rolls back when {@code i % 3
 * == 1} and answers UNKNOW when {@code i % 3 == 2}; a check-back commits i % 3 == 2 (and repeats the
 * local answer for the others, which the broker should never ask about). After the sends the
 * program waits up to {@code --check-wait-ms} until every i % 3 == 2 was checked, then lingers
 * {@code --linger-ms} so the answers (oneway END_TRANSACTION) go out before the shutdown. The
 * heartbeat interval is short ({@code --heartbeat-ms}) because the broker only knows a producer,
 * and so can only check back on it, once a heartbeat has reached it.
 *
 * <p>{@code --timer}: every message is also a 5.x timer message, as {@code Producer --timer} (see
 * {@link Timer}). {@code --commit-after-ms}: the local transaction takes that long before it
 * answers, so the commit (or rollback) reaches the broker that much after the half message;
 * RocketMQ counts a timer's delay from the commit, so the due time a message carries ({@code
 * sluiceDue}) includes it.
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * SENT &lt;msgId&gt; &lt;offsetMsgId&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;sendStatus&gt; i=&lt;i&gt; tag=- keys=- okey=- due=&lt;ms|-&gt; local=&lt;state&gt;
 * CHECK &lt;msgId&gt; i=&lt;i&gt; answer=&lt;state&gt; times=&lt;TRANSACTION_CHECK_TIMES|-&gt;
 * OK sent=&lt;n&gt; checked=&lt;distinct i checked&gt;                                  exit 0
 * </pre>
 *
 * <p>SENT lines as {@code Producer}'s (the queue offset is the half message's), one per message in
 * send order; CHECK lines as check-backs arrive. A failed send prints {@code ERR send <i>
 * <exception>} and stops (exit 1); missing check-backs end with {@code ERR checked=<n>
 * expected=<m>} (exit 1).
 */
public final class TxProducer {
    private static final String USAGE = "--namesrv HOST:PORT --topic TOPIC --count N [--group G]"
            + " [--body-prefix B] [--check-wait-ms MS] [--linger-ms MS] [--heartbeat-ms MS]"
            + " [--send-timeout-ms MS] [--timeout-ms MS] [--timer KIND=VALUE [--timer-step N]]"
            + " [--commit-after-ms MS]";

    /** The user property holding the message's index. */
    private static final String INDEX = "TX_I";

    private TxProducer() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "count", "group", "body-prefix", "check-wait-ms", "linger-ms",
                        "heartbeat-ms", "send-timeout-ms", "timeout-ms", "timer", "timer-step", "commit-after-ms"},
                    new String[] {});
            args.required("namesrv");
            args.required("topic");
            args.required("count");
            try {
                Timer.parse(args.get("timer", null), args.getLong("timer-step", 0));
            } catch (IllegalArgumentException e) {
                throw new Args.UsageException(e.getMessage());
            }
        } catch (Args.UsageException e) {
            Harness.usage("TxProducer", e.getMessage(), USAGE);
            return;
        }
        int count = args.getInt("count", 0);
        long sendTimeoutMs = args.getLong("send-timeout-ms", 3_000);
        long checkWaitMs = args.getLong("check-wait-ms", 60_000);
        long lingerMs = args.getLong("linger-ms", 3_000);
        long commitAfterMs = args.getLong("commit-after-ms", 0);
        Harness.init("TxProducer", args.getLong("timeout-ms",
                30_000 + count * (sendTimeoutMs + commitAfterMs) + checkWaitMs + lingerMs));
        Harness.exit(new TxProducer().run(args, count, sendTimeoutMs, checkWaitMs, lingerMs));
    }

    /** Indexes the broker asked about. */
    private final Set<Integer> checked = ConcurrentHashMap.newKeySet();

    /** What the local transaction of message i says. */
    private static LocalTransactionState local(int i) {
        switch (i % 3) {
            case 0:
                return LocalTransactionState.COMMIT_MESSAGE;
            case 1:
                return LocalTransactionState.ROLLBACK_MESSAGE;
            default:
                return LocalTransactionState.UNKNOW;
        }
    }

    private static int indexOf(Message msg) {
        String v = msg.getUserProperty(INDEX);
        try {
            return v == null ? -1 : Integer.parseInt(v);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private int run(Args args, int count, long sendTimeoutMs, long checkWaitMs, long lingerMs) {
        String topic = args.required("topic");
        String bodyPrefix = args.get("body-prefix", "tx");
        Timer timer = Timer.parse(args.get("timer", null), args.getLong("timer-step", 0));
        long commitAfterMs = args.getLong("commit-after-ms", 0);
        TransactionMQProducer producer = new TransactionMQProducer(args.get("group", "sluice_it_tx_producer"));
        producer.setNamesrvAddr(args.required("namesrv"));
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("tx-producer-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout((int) sendTimeoutMs);
        producer.setHeartbeatBrokerInterval(args.getInt("heartbeat-ms", 1_000));
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                if (commitAfterMs > 0) {
                    try {
                        Thread.sleep(commitAfterMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return local(indexOf(msg));
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                int i = indexOf(msg);
                LocalTransactionState answer = i % 3 == 2 ? LocalTransactionState.COMMIT_MESSAGE : local(i);
                String times = msg.getProperty("TRANSACTION_CHECK_TIMES");
                synchronized (Harness.out) {
                    Harness.out.println("CHECK " + msg.getTransactionId() + " i=" + i + " answer=" + answer
                            + " times=" + (times == null ? "-" : times));
                }
                if (i >= 0) {
                    checked.add(i);
                }
                return answer;
            }
        });
        try {
            producer.start();
        } catch (Exception e) {
            Harness.out.println("ERR start " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        }
        try {
            for (int i = 0; i < count; i++) {
                Message msg = new Message(topic, (bodyPrefix + "-" + i).getBytes(StandardCharsets.UTF_8));
                msg.putUserProperty(INDEX, Integer.toString(i));
                if (timer != null) {
                    try {
                        timer.apply(msg, i, commitAfterMs);
                    } catch (ReflectiveOperationException e) {
                        Harness.out.println("ERR timer " + Harness.describe(e));
                        return Harness.EXIT_FAIL;
                    }
                }
                TransactionSendResult r;
                try {
                    r = producer.sendMessageInTransaction(msg, null);
                } catch (Exception e) {
                    Harness.out.println("ERR send " + i + " " + Harness.describe(e));
                    return Harness.EXIT_FAIL;
                }
                String line = "SENT " + r.getMsgId() + " " + (r.getOffsetMsgId() == null ? "-" : r.getOffsetMsgId())
                        + " " + (r.getMessageQueue() == null ? -1 : r.getMessageQueue().getQueueId()) + " "
                        + r.getQueueOffset() + " " + r.getSendStatus() + " i=" + i + " tag=- keys=- okey=-"
                        + " due=" + (msg.getUserProperty(Timer.DUE) == null ? "-" : msg.getUserProperty(Timer.DUE))
                        + " local=" + r.getLocalTransactionState();
                synchronized (Harness.out) {
                    Harness.out.println(line);
                }
            }
            int expected = 0;
            for (int i = 0; i < count; i++) {
                if (i % 3 == 2) {
                    expected++;
                }
            }
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(checkWaitMs);
            while (checkedUnknown(count) < expected && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            int got = checkedUnknown(count);
            if (got < expected) {
                Harness.out.println("ERR checked=" + got + " expected=" + expected);
                return Harness.EXIT_FAIL;
            }
            // The answers to the last check-backs go out (oneway) after the listener returns.
            Thread.sleep(lingerMs);
        } catch (InterruptedException e) {
            Harness.out.println("ERR interrupted");
            return Harness.EXIT_FAIL;
        } finally {
            producer.shutdown();
        }
        Harness.out.println("OK sent=" + count + " checked=" + checked.size());
        return Harness.EXIT_OK;
    }

    /** How many of the UNKNOW messages (i % 3 == 2) were checked. */
    private int checkedUnknown(int count) {
        int n = 0;
        for (int i : checked) {
            if (i % 3 == 2 && i < count) {
                n++;
            }
        }
        return n;
    }
}
