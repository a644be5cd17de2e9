package sluice.it;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * A {@link DefaultLitePullConsumer} that polls a topic and prints what it receives.
 *
 * <pre>
 * LitePullConsumer --namesrv 127.0.0.1:9876 --topic T --group G --count N [--mode subscribe|assign]
 *                  [--expr '*'] [--from first|last] [--props] [--poll-timeout-ms 1000]
 *                  [--heartbeat-ms MS] [--wait-ms 30000] [--timeout-ms MS]
 * </pre>
 *
 * <p>{@code subscribe} (default): {@code subscribe(topic, expr)}, queues assigned by the group's
 * rebalance, consuming from the first (or last) offset when the group has none, offsets committed
 * to the broker. {@code assign}: {@code fetchMessageQueues(topic)}, {@code assign} all of them and
 * {@code seekToBegin} (or {@code seekToEnd}) each; {@code --expr} is not used.
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * STARTED &lt;group&gt;                                  once started (assign: once the queues are assigned)
 * ASSIGNED &lt;queueId&gt;                               assign: one per queue assigned
 * RECV &lt;msgId&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;body&gt;      one per message polled (body escaped, see Harness)
 * PROPS &lt;msgId&gt; topic=&lt;t&gt; tags=&lt;t&gt; keys=&lt;k&gt; reconsume=&lt;n&gt; born=&lt;ms&gt; store=&lt;ms&gt;   with --props
 * TIMER &lt;msgId&gt; recv=&lt;ms&gt; due=&lt;ms&gt; ...              a timer message (see Timer.line; recv: when polled)
 * OK received=&lt;n&gt;                                 exit 0
 * </pre>
 *
 * It stops once {@code --count} messages were polled, after {@code --wait-ms}, or on SIGTERM; with
 * fewer than {@code --count} then it prints {@code ERR received=<n> expected=<count>} and exits 1
 * ({@code --count 0}: poll for the whole wait, exit 0).
 */
public final class LitePullConsumer {
    private static final String USAGE = "--namesrv HOST:PORT --topic TOPIC --group G --count N"
            + " [--mode subscribe|assign] [--expr EXPR] [--from first|last] [--props] [--poll-timeout-ms MS]"
            + " [--heartbeat-ms MS] [--wait-ms MS] [--timeout-ms MS]";

    private LitePullConsumer() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "group", "count", "mode", "expr", "from", "poll-timeout-ms",
                        "wait-ms", "timeout-ms", "heartbeat-ms"},
                    new String[] {"props"});
            args.required("namesrv");
            args.required("topic");
            args.required("group");
            args.required("count");
            String mode = args.get("mode", "subscribe");
            if (!mode.equals("subscribe") && !mode.equals("assign")) {
                throw new Args.UsageException("--mode wants subscribe or assign, got " + mode);
            }
            String from = args.get("from", "first");
            if (!from.equals("first") && !from.equals("last")) {
                throw new Args.UsageException("--from wants first or last, got " + from);
            }
        } catch (Args.UsageException e) {
            Harness.usage("LitePullConsumer", e.getMessage(), USAGE);
            return;
        }
        long waitMs = args.getLong("wait-ms", 30_000);
        Harness.init("LitePullConsumer", args.getLong("timeout-ms", waitMs + 20_000));
        CountDownLatch stop = new CountDownLatch(1);
        Harness.Termination termination = Harness.onSigterm(stop::countDown);
        termination.exit(run(args, waitMs, stop));
    }

    private static int run(Args args, long waitMs, CountDownLatch stop) {
        String topic = args.required("topic");
        String group = args.required("group");
        int count = args.getInt("count", 0);
        boolean props = args.flag("props");
        boolean assign = args.get("mode", "subscribe").equals("assign");
        boolean fromFirst = args.get("from", "first").equals("first");

        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group);
        consumer.setNamesrvAddr(args.required("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName("lite-pull-" + ProcessHandle.current().pid());
        consumer.setPollTimeoutMillis(args.getLong("poll-timeout-ms", 1_000));
        if (args.get("heartbeat-ms", null) != null) {
            consumer.setHeartbeatBrokerInterval(args.getInt("heartbeat-ms", 30_000));
        }
        consumer.setConsumeFromWhere(fromFirst
                ? ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
                : ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        int received = 0;
        try {
            if (!assign) {
                consumer.subscribe(topic, args.get("expr", "*"));
            }
            consumer.start();
            if (assign) {
                Collection<MessageQueue> mqs = consumer.fetchMessageQueues(topic);
                List<MessageQueue> queues = new ArrayList<>(mqs);
                consumer.assign(queues);
                for (MessageQueue mq : queues) {
                    if (fromFirst) {
                        consumer.seekToBegin(mq);
                    } else {
                        consumer.seekToEnd(mq);
                    }
                    Harness.out.println("ASSIGNED " + mq.getQueueId());
                }
            }
        } catch (Exception e) {
            Harness.out.println("ERR start " + Harness.describe(e));
            consumer.shutdown();
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("STARTED " + group);
        long deadline = System.currentTimeMillis() + waitMs;
        try {
            while (stop.getCount() > 0 && System.currentTimeMillis() < deadline && (count == 0 || received < count)) {
                for (MessageExt m : consumer.poll()) {
                    long now = System.currentTimeMillis();
                    StringBuilder sb = new StringBuilder();
                    sb.append("RECV ").append(m.getMsgId()).append(' ').append(m.getQueueId()).append(' ')
                            .append(m.getQueueOffset()).append(' ').append(Harness.escapeBody(m.getBody()));
                    if (props) {
                        sb.append("\nPROPS ").append(m.getMsgId()).append(" topic=").append(m.getTopic())
                                .append(" tags=").append(m.getTags()).append(" keys=").append(m.getKeys())
                                .append(" reconsume=").append(m.getReconsumeTimes())
                                .append(" born=").append(m.getBornTimestamp())
                                .append(" store=").append(m.getStoreTimestamp());
                    }
                    String timer = Timer.line(m, now);
                    if (timer != null) {
                        sb.append('\n').append(timer);
                    }
                    Harness.out.println(sb);
                    received++;
                }
            }
            if (!assign) {
                consumer.commitSync();
            }
        } catch (Exception e) {
            Harness.out.println("ERR poll " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        } finally {
            consumer.shutdown();
        }
        if (count > 0 && received < count) {
            Harness.out.println("ERR received=" + received + " expected=" + count);
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("OK received=" + received);
        return Harness.EXIT_OK;
    }
}
