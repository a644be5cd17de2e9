package sluice.it;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Reads every queue of a topic from its first to its last offset (as they are when it starts) with
 * {@link DefaultMQPullConsumer} (deprecated, but in both 4.9.8 and 5.3.3, and the only client API
 * that pulls a queue at an explicit offset and reports its bounds) and prints every message: the
 * end of a failover drill, where a consumer must see everything the cluster kept.
 *
 * <pre>
 * DrillDrain --namesrv 127.0.0.1:9876 --topic T [--group G] [--batch 32] [--stuck-ms 10000]
 *            [--timeout-ms 120000]
 * </pre>
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * QUEUE &lt;brokerName&gt; &lt;queueId&gt; &lt;minOffset&gt; &lt;maxOffset&gt;     per queue, before reading it
 * RECV &lt;msgId&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;body&gt;              per message (body escaped, see Harness)
 * OK received=&lt;n&gt; queues=&lt;q&gt;                                exit 0
 * </pre>
 *
 * {@code msgId} is the client's unique id (the producer's). A queue that does not advance for
 * {@code --stuck-ms} (the broker keeps answering "no message" below its max offset, e.g. a slave
 * without {@code slaveReadEnable}) ends the run with {@code ERR stuck <queueId> at <offset> max
 * <max> <last status>}, exit 1; a pull that throws: {@code ERR pull ...}, exit 1.
 */
public final class DrillDrain {
    private static final String USAGE = "--namesrv HOST:PORT --topic TOPIC [--group G] [--batch N] [--stuck-ms MS]"
            + " [--timeout-ms MS]";

    private DrillDrain() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "group", "batch", "stuck-ms", "timeout-ms"},
                    new String[] {});
            args.required("namesrv");
            args.required("topic");
        } catch (Args.UsageException e) {
            Harness.usage("DrillDrain", e.getMessage(), USAGE);
            return;
        }
        Harness.init("DrillDrain", args.getLong("timeout-ms", 120_000));
        Harness.exit(run(args));
    }

    @SuppressWarnings("deprecation")
    private static int run(Args args) {
        String topic = args.required("topic");
        int batch = args.getInt("batch", 32);
        long stuckMs = args.getLong("stuck-ms", 10_000);
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(args.get("group", "sluice_drill_drain"));
        consumer.setNamesrvAddr(args.required("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName("drill-drain-" + ProcessHandle.current().pid());
        long received = 0;
        int queues = 0;
        try {
            consumer.start();
            List<MessageQueue> mqs = new ArrayList<>(consumer.fetchSubscribeMessageQueues(topic));
            mqs.sort(Comparator.comparing(MessageQueue::getBrokerName).thenComparingInt(MessageQueue::getQueueId));
            for (MessageQueue mq : mqs) {
                long min = consumer.minOffset(mq);
                long max = consumer.maxOffset(mq);
                Harness.out.println("QUEUE " + mq.getBrokerName() + " " + mq.getQueueId() + " " + min + " " + max);
                queues++;
                long offset = min;
                long lastProgress = System.currentTimeMillis();
                while (offset < max) {
                    PullResult r = consumer.pull(mq, "*", offset, batch);
                    long next = r.getNextBeginOffset();
                    String status = r.getPullStatus().toString();
                    if (status.equals("FOUND") && r.getMsgFoundList() != null) {
                        for (MessageExt m : r.getMsgFoundList()) {
                            Harness.out.println("RECV " + m.getMsgId() + " " + m.getQueueId() + " "
                                    + m.getQueueOffset() + " " + Harness.escapeBody(m.getBody()));
                            received++;
                        }
                    } else if (status.equals("OFFSET_ILLEGAL")) {
                        Harness.out.println("ERR offset illegal " + mq.getQueueId() + " at " + offset + " next " + next
                                + " min " + r.getMinOffset() + " max " + r.getMaxOffset());
                        return Harness.EXIT_FAIL;
                    }
                    // Only FOUND advances by what it returned; a "no message" answer below max must not
                    // skip anything, so it is retried at the same offset.
                    if (status.equals("FOUND") && next > offset) {
                        offset = next;
                        lastProgress = System.currentTimeMillis();
                    } else if (System.currentTimeMillis() - lastProgress > stuckMs) {
                        Harness.out.println("ERR stuck " + mq.getQueueId() + " at " + offset + " max " + max + " "
                                + status);
                        return Harness.EXIT_FAIL;
                    } else {
                        Thread.sleep(50);
                    }
                }
            }
        } catch (Exception e) {
            Harness.out.println("ERR pull " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        } finally {
            consumer.shutdown();
        }
        Harness.out.println("OK received=" + received + " queues=" + queues);
        return Harness.EXIT_OK;
    }
}
