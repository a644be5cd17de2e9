package sluice.it;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A concurrent push consumer that prints what it receives.
 *
 * <pre>
 * PushConsumer --namesrv 127.0.0.1:9876 --topic T --group G --count 10 [--expr '*']
 *              [--from first|last] [--broadcast] [--props] [--wait-ms 30000] [--timeout-ms MS]
 * </pre>
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * STARTED &lt;group&gt;                                         once the consumer has started
 * RECV &lt;msgId&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;body&gt;             one per delivery (body escaped, see Harness)
 * PROPS &lt;msgId&gt; topic=&lt;t&gt; tags=&lt;t&gt; keys=&lt;k&gt; reconsume=&lt;n&gt; offsetMsgId=&lt;id&gt;   with --props, after each RECV
 * OK received=&lt;n&gt;                                        exit 0
 * </pre>
 *
 * It exits as soon as {@code --count} deliveries arrived (duplicates count), or after {@code
 * --wait-ms}: with fewer than {@code --count} deliveries then, it prints {@code ERR received=<n>
 * expected=<count>} and exits 1. {@code --count 0} consumes for the whole wait and exits 0.
 */
public final class PushConsumer {
    private static final String USAGE = "--namesrv HOST:PORT --topic TOPIC --group G --count N [--expr EXPR]"
            + " [--from first|last] [--broadcast] [--props] [--wait-ms MS] [--timeout-ms MS]";

    private PushConsumer() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "group", "count", "expr", "from", "wait-ms", "timeout-ms"},
                    new String[] {"broadcast", "props"});
            args.required("namesrv");
            args.required("topic");
            args.required("group");
            args.required("count");
            String from = args.get("from", "first");
            if (!from.equals("first") && !from.equals("last")) {
                throw new Args.UsageException("--from wants first or last, got " + from);
            }
        } catch (Args.UsageException e) {
            Harness.usage("PushConsumer", e.getMessage(), USAGE);
            return;
        }
        long waitMs = args.getLong("wait-ms", 30_000);
        Harness.init("PushConsumer", args.getLong("timeout-ms", waitMs + 20_000));
        Harness.exit(run(args, waitMs));
    }

    private static int run(Args args, long waitMs) {
        int count = args.getInt("count", 0);
        boolean props = args.flag("props");
        String group = args.required("group");
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(args.required("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName("push-consumer-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(args.get("from", "first").equals("first")
                ? ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
                : ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        if (args.flag("broadcast")) {
            // MessageModel moved package between 4.x and 5.x; reach it through the getter's type.
            var clustering = consumer.getMessageModel();
            consumer.setMessageModel(Enum.valueOf(clustering.getDeclaringClass(), "BROADCASTING"));
        }
        AtomicInteger received = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(1);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                StringBuilder sb = new StringBuilder();
                sb.append("RECV ").append(m.getMsgId()).append(' ').append(m.getQueueId()).append(' ')
                        .append(m.getQueueOffset()).append(' ').append(Harness.escapeBody(m.getBody()));
                if (props) {
                    sb.append("\nPROPS ").append(m.getMsgId()).append(" topic=").append(m.getTopic())
                            .append(" tags=").append(m.getTags()).append(" keys=").append(m.getKeys())
                            .append(" reconsume=").append(m.getReconsumeTimes())
                            .append(" offsetMsgId=").append(offsetMsgId(m));
                }
                synchronized (Harness.out) {
                    Harness.out.println(sb);
                }
                int n = received.incrementAndGet();
                if (count > 0 && n >= count) {
                    done.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        try {
            consumer.subscribe(args.required("topic"), args.get("expr", "*"));
            consumer.start();
        } catch (Exception e) {
            Harness.out.println("ERR start " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("STARTED " + group);
        try {
            done.await(waitMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            consumer.shutdown();
        }
        int n = received.get();
        if (count > 0 && n < count) {
            Harness.out.println("ERR received=" + n + " expected=" + count);
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("OK received=" + n);
        return Harness.EXIT_OK;
    }

    /** The broker-assigned id (commit log offset based); getMsgId() is the client's unique key. */
    private static String offsetMsgId(MessageExt m) {
        try {
            return (String) m.getClass().getMethod("getOffsetMsgId").invoke(m);
        } catch (ReflectiveOperationException e) {
            return "-";
        }
    }
}
