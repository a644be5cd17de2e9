package sluice.it;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * POP consumption with the 5.x push consumer: {@code setClientRebalance(false)}, so the client
 * asks the broker for its queues (QUERY_ASSIGNMENT) and, for the assignments the broker marks POP
 * (the group's mode set beforehand with {@code mqadmin setConsumeMode -m POP}), pops instead of
 * pulling, acks what the listener consumed and hides again what it failed.
 *
 * <pre>
 * PopConsume --namesrv 127.0.0.1:9876 --topic T --group G --count N [--expr '*'] [--fail-every K]
 *            [--invisible-ms 5000] [--batch 32] [--send-after-ms 2000] [--linger-ms 10000]
 *            [--wait-ms 40000] [--timeout-ms MS]
 * </pre>
 *
 * <p>Message i (from 0) has body {@code pop-<i>} and tag {@code A} (i even) or {@code B}. The
 * first half of them is sent before the consumer starts, the rest {@code --send-after-ms} after
 * (so the consumer's pops must be woken by new messages). The consumer uses
 * CONSUME_FROM_FIRST_OFFSET (pop init mode MIN), {@code setPopInvisibleTime(--invisible-ms)}
 * (the client refuses less than 5000) and {@code setPopBatchNums(--batch)}; it subscribes
 * {@code --expr}: {@code *} or tags joined by {@code ||}. The listener returns RECONSUME_LATER for
 * the first delivery of every message with {@code i % K == 0} ({@code --fail-every K}, 0: none)
 * and CONSUME_SUCCESS otherwise (the client then acks: ACK_MESSAGE; for RECONSUME_LATER it sends
 * CHANGE_MESSAGE_INVISIBLETIME with the delay of level reconsumeTimes, 10 s for a first failure).
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * SENT &lt;i&gt; &lt;tag&gt; &lt;msgId&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;epochMs&gt;   one per message sent
 * STARTED &lt;group&gt; &lt;epochMs&gt;                                once the consumer has started
 * POPRECV i=&lt;i&gt; tag=&lt;t&gt; reconsume=&lt;n&gt; topic=&lt;t&gt; queue=&lt;q&gt; offset=&lt;o&gt; recv=&lt;epochMs&gt;
 *         ck=&lt;POP_CK, ',' for ' '&gt; first=&lt;1ST_POP_TIME|-&gt; action=ack|later msgId=&lt;id&gt;
 *                                                            one per delivery, action: what the listener returned
 * DONE acked=&lt;n&gt; expected=&lt;m&gt; deliveries=&lt;k&gt; at=&lt;epochMs&gt;          when every expected message
 *                                                            was consumed, or the wait ended
 * RPC req=&lt;code&gt; resp=&lt;code&gt; n=&lt;count&gt; topics=&lt;...&gt; queues=&lt;...&gt;  the consumer's requests (PopRpcLog)
 * OK acked=&lt;n&gt;  |  ERR acked=&lt;n&gt; expected=&lt;m&gt; missing=&lt;i,...&gt;
 * </pre>
 *
 * The expected messages are those whose tag the expression selects; once each was consumed
 * successfully the consumer keeps running for {@code --linger-ms} (deliveries that must not come
 * have time to: redeliveries of acked messages, filtered tags), then shuts down. It stops after
 * {@code --wait-ms} at the latest; the Rust test judges what arrived.
 */
public final class PopConsume {
    private static final String USAGE = "--namesrv HOST:PORT --topic T --group G --count N [--expr EXPR]"
            + " [--fail-every K] [--invisible-ms MS] [--batch N] [--send-after-ms MS] [--linger-ms MS]"
            + " [--wait-ms MS] [--timeout-ms MS]";

    private PopConsume() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "group", "count", "expr", "fail-every", "invisible-ms", "batch",
                        "send-after-ms", "linger-ms", "wait-ms", "timeout-ms"},
                    new String[] {});
            args.required("namesrv");
            args.required("topic");
            args.required("group");
            args.required("count");
        } catch (Args.UsageException e) {
            Harness.usage("PopConsume", e.getMessage(), USAGE);
            return;
        }
        long waitMs = args.getLong("wait-ms", 40_000);
        long lingerMs = args.getLong("linger-ms", 10_000);
        Harness.init("PopConsume", args.getLong("timeout-ms", waitMs + lingerMs + 30_000));
        try {
            Harness.exit(run(args, waitMs, lingerMs));
        } catch (Exception e) {
            Harness.out.println("ERR " + Harness.describe(e));
            Harness.exit(Harness.EXIT_FAIL);
        }
    }

    private static String tag(int i) {
        return i % 2 == 0 ? "A" : "B";
    }

    private static int run(Args args, long waitMs, long lingerMs) throws Exception {
        String namesrv = args.required("namesrv");
        String topic = args.required("topic");
        String group = args.required("group");
        int count = args.getInt("count", 0);
        String expr = args.get("expr", "*");
        int failEvery = args.getInt("fail-every", 0);
        Set<String> tags = expr.trim().equals("*") ? null : Set.of(expr.replace(" ", "").split("\\|\\|"));
        Set<Integer> expected = ConcurrentHashMap.newKeySet();
        for (int i = 0; i < count; i++) {
            if (tags == null || tags.contains(tag(i))) {
                expected.add(i);
            }
        }
        int expectedCount = expected.size();

        DefaultMQProducer producer = new DefaultMQProducer("PopConsumeP-" + ProcessHandle.current().pid());
        producer.setNamesrvAddr(namesrv);
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("pop-producer-" + ProcessHandle.current().pid());
        producer.start();
        int firstHalf = count / 2;
        send(producer, topic, 0, firstHalf);

        PopRpcLog rpc = new PopRpcLog();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group, rpc);
        consumer.setNamesrvAddr(namesrv);
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName("pop-consumer-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setClientRebalance(false);
        consumer.setPopInvisibleTime(args.getLong("invisible-ms", 5_000));
        consumer.setPopBatchNums(args.getInt("batch", 32));
        consumer.setAwaitTerminationMillisWhenShutdown(5_000);
        Set<Integer> acked = ConcurrentHashMap.newKeySet();
        Map<Integer, AtomicInteger> seen = new ConcurrentHashMap<>();
        AtomicInteger deliveries = new AtomicInteger();
        CountDownLatch allConsumed = new CountDownLatch(1);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            boolean later = false;
            StringBuilder sb = new StringBuilder();
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                int i = PopRpcLog.index(m);
                int n = seen.computeIfAbsent(i, k -> new AtomicInteger()).incrementAndGet();
                boolean fail = failEvery > 0 && i % failEvery == 0 && n == 1;
                later |= fail;
                if (sb.length() > 0) {
                    sb.append('\n');
                }
                sb.append("POPRECV i=").append(i).append(" tag=").append(m.getTags())
                        .append(" reconsume=").append(m.getReconsumeTimes()).append(" topic=").append(m.getTopic())
                        .append(" queue=").append(m.getQueueId()).append(" offset=").append(m.getQueueOffset())
                        .append(" recv=").append(now).append(" ck=").append(PopRpcLog.ck(m))
                        .append(" first=").append(PopRpcLog.orDash(m.getProperty(MessageConst.PROPERTY_FIRST_POP_TIME)))
                        .append(" action=").append(fail ? "later" : "ack").append(" msgId=").append(m.getMsgId());
            }
            synchronized (Harness.out) {
                Harness.out.println(sb);
            }
            deliveries.addAndGet(msgs.size());
            if (later) {
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            for (MessageExt m : msgs) {
                acked.add(PopRpcLog.index(m));
            }
            if (acked.containsAll(expected)) {
                allConsumed.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.subscribe(topic, expr);
        consumer.start();
        long started = System.currentTimeMillis();
        Harness.out.println("STARTED " + group + " " + started);
        long sendAfter = args.getLong("send-after-ms", 2_000);
        Thread.sleep(sendAfter);
        send(producer, topic, firstHalf, count);
        producer.shutdown();
        if (expected.isEmpty()) {
            allConsumed.countDown();
        }
        allConsumed.await(Math.max(0, started + waitMs - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
        Harness.out.println("DONE acked=" + acked.size() + " expected=" + expectedCount + " deliveries="
                + deliveries.get() + " at=" + System.currentTimeMillis());
        Thread.sleep(lingerMs);
        consumer.shutdown();
        rpc.print();
        if (!acked.containsAll(expected)) {
            StringBuilder missing = new StringBuilder();
            for (int i = 0; i < count; i++) {
                if (expected.contains(i) && !acked.contains(i)) {
                    missing.append(missing.length() == 0 ? "" : ",").append(i);
                }
            }
            Harness.out.println("ERR acked=" + acked.size() + " expected=" + expectedCount + " missing=" + missing);
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("OK acked=" + acked.size());
        return Harness.EXIT_OK;
    }

    private static void send(DefaultMQProducer producer, String topic, int from, int to) throws Exception {
        for (int i = from; i < to; i++) {
            Message msg = new Message(topic, tag(i), ("pop-" + i).getBytes(StandardCharsets.UTF_8));
            SendResult r = producer.send(msg);
            Harness.out.println("SENT " + i + " " + tag(i) + " " + r.getMsgId() + " " + r.getMessageQueue().getQueueId()
                    + " " + r.getQueueOffset() + " " + System.currentTimeMillis());
        }
    }
}
