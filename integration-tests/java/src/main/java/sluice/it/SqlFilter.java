package sluice.it;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * SQL92 property filters ({@code MessageSelector.bySql}) end to end: a producer of messages with
 * user properties, and a push or lite pull consumer subscribing with a SQL92 expression.
 *
 * <pre>
 * SqlFilter produce --namesrv 127.0.0.1:9876 --topic T --count N [--timeout-ms MS]
 * SqlFilter consume --namesrv 127.0.0.1:9876 --topic T --group G --sql EXPR --kind push|lite
 *                   --count N [--linger-ms 2000] [--wait-ms 60000] [--timeout-ms MS]
 * </pre>
 *
 * <p>Message i (from 0) has body {@code sql-<i>}, tag {@code TagA} (i even) or {@code TagB}, and
 * the user properties {@code idx=<i>}, {@code mod10=<i mod 10>}, {@code color} = red, green, blue
 * by i mod 3 except every 25th message, which has no color, and {@code vip=true} on every 7th
 * (i mod 7 = 0) and {@code vip=false} on the others.
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * SENT &lt;i&gt; &lt;msgId&gt;                                   produce: one per message
 * STARTED &lt;group&gt;                                     consume: once started
 * RECV &lt;msgId&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;body&gt;        consume: one per delivery
 * ERR start &lt;exception&gt;                               the consumer did not start (how the broker refused it)
 * OK sent=&lt;n&gt; | OK received=&lt;n&gt;                      exit 0
 * </pre>
 *
 * A consumer stops {@code --linger-ms} after its {@code --count}-th delivery (so that deliveries
 * which should not come have time to), after {@code --wait-ms}, or on SIGTERM; with fewer than
 * {@code --count} deliveries it prints {@code ERR received=<n> expected=<count>} and exits 1.
 */
public final class SqlFilter {
    private static final String USAGE = "produce --namesrv HOST:PORT --topic T --count N | consume --namesrv HOST:PORT"
            + " --topic T --group G --sql EXPR --kind push|lite --count N [--linger-ms MS] [--wait-ms MS] [--timeout-ms MS]";

    private SqlFilter() {}

    public static void main(String[] argv) {
        if (argv.length == 0 || !(argv[0].equals("produce") || argv[0].equals("consume"))) {
            Harness.usage("SqlFilter", "produce or consume first", USAGE);
            return;
        }
        String[] rest = java.util.Arrays.copyOfRange(argv, 1, argv.length);
        Args args;
        try {
            args = Args.parse(rest,
                    new String[] {"namesrv", "topic", "group", "sql", "kind", "count", "linger-ms", "wait-ms",
                        "timeout-ms"},
                    new String[] {});
            args.required("namesrv");
            args.required("topic");
            args.required("count");
            if (argv[0].equals("consume")) {
                args.required("group");
                args.required("sql");
                String kind = args.required("kind");
                if (!kind.equals("push") && !kind.equals("lite")) {
                    throw new Args.UsageException("--kind wants push or lite, got " + kind);
                }
            }
        } catch (Args.UsageException e) {
            Harness.usage("SqlFilter", e.getMessage(), USAGE);
            return;
        }
        long waitMs = args.getLong("wait-ms", 60_000);
        Harness.init("SqlFilter", args.getLong("timeout-ms", waitMs + 30_000));
        if (argv[0].equals("produce")) {
            System.exit(produce(args));
        }
        CountDownLatch stop = new CountDownLatch(1);
        Harness.Termination termination = Harness.onSigterm(stop::countDown);
        termination.exit(args.required("kind").equals("push") ? push(args, waitMs, stop) : lite(args, waitMs, stop));
    }

    private static int produce(Args args) {
        String topic = args.required("topic");
        int count = args.getInt("count", 0);
        DefaultMQProducer producer = new DefaultMQProducer("sql_producer_" + ProcessHandle.current().pid());
        producer.setNamesrvAddr(args.required("namesrv"));
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("sql-producer-" + ProcessHandle.current().pid());
        try {
            producer.start();
            for (int i = 0; i < count; i++) {
                Message m = new Message(topic, i % 2 == 0 ? "TagA" : "TagB",
                        ("sql-" + i).getBytes(StandardCharsets.UTF_8));
                m.putUserProperty("idx", Integer.toString(i));
                m.putUserProperty("mod10", Integer.toString(i % 10));
                if (i % 25 != 0) {
                    m.putUserProperty("color", new String[] {"red", "green", "blue"}[i % 3]);
                }
                m.putUserProperty("vip", i % 7 == 0 ? "true" : "false");
                SendResult r = producer.send(m);
                Harness.out.println("SENT " + i + " " + r.getMsgId());
            }
        } catch (Exception e) {
            Harness.out.println("ERR send " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        } finally {
            producer.shutdown();
        }
        Harness.out.println("OK sent=" + count);
        return Harness.EXIT_OK;
    }

    private static void print(MessageExt m) {
        Harness.out.println("RECV " + m.getMsgId() + " " + m.getQueueId() + " " + m.getQueueOffset() + " "
                + Harness.escapeBody(m.getBody()));
    }

    /** Waits for {@code count} deliveries (or the wait, or SIGTERM), then lingers. */
    private static int await(AtomicInteger received, int count, long waitMs, long lingerMs, CountDownLatch stop)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + waitMs;
        while (stop.getCount() > 0 && received.get() < count && System.currentTimeMillis() < deadline) {
            stop.await(20, TimeUnit.MILLISECONDS);
        }
        if (received.get() >= count) {
            stop.await(lingerMs, TimeUnit.MILLISECONDS);
        }
        return received.get();
    }

    private static int finish(int received, int count) {
        if (received < count) {
            Harness.out.println("ERR received=" + received + " expected=" + count);
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("OK received=" + received);
        return Harness.EXIT_OK;
    }

    private static int push(Args args, long waitMs, CountDownLatch stop) {
        String group = args.required("group");
        int count = args.getInt("count", 0);
        AtomicInteger received = new AtomicInteger();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(args.required("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName("sql-push-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPullTimeDelayMillsWhenException(500);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                print(m);
                received.incrementAndGet();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        try {
            consumer.subscribe(args.required("topic"), MessageSelector.bySql(args.required("sql")));
            consumer.start();
        } catch (Exception e) {
            Harness.out.println("ERR start " + Harness.describe(e));
            consumer.shutdown();
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("STARTED " + group);
        try {
            return finish(await(received, count, waitMs, args.getLong("linger-ms", 2_000), stop), count);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Harness.EXIT_FAIL;
        } finally {
            consumer.shutdown();
        }
    }

    private static int lite(Args args, long waitMs, CountDownLatch stop) {
        String group = args.required("group");
        int count = args.getInt("count", 0);
        long lingerMs = args.getLong("linger-ms", 2_000);
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group);
        consumer.setNamesrvAddr(args.required("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName("sql-lite-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPollTimeoutMillis(500);
        try {
            consumer.subscribe(args.required("topic"), MessageSelector.bySql(args.required("sql")));
            consumer.start();
        } catch (Exception e) {
            Harness.out.println("ERR start " + Harness.describe(e));
            consumer.shutdown();
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("STARTED " + group);
        int received = 0;
        long deadline = System.currentTimeMillis() + waitMs;
        long lingerUntil = Long.MAX_VALUE;
        try {
            while (stop.getCount() > 0 && System.currentTimeMillis() < Math.min(deadline, lingerUntil)) {
                for (MessageExt m : consumer.poll()) {
                    print(m);
                    received++;
                }
                if (received >= count && lingerUntil == Long.MAX_VALUE) {
                    lingerUntil = System.currentTimeMillis() + lingerMs;
                }
            }
        } catch (Exception e) {
            Harness.out.println("ERR poll " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        } finally {
            consumer.shutdown();
        }
        return finish(received, count);
    }
}
