package sluice.it;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * A push consumer (concurrent or orderly) that prints what it receives and can fail deliveries on
 * purpose.
 *
 * <pre>
 * PushConsumer --namesrv 127.0.0.1:9876 --topic T --group G --count 10 [--expr '*']
 *              [--from first|last|timestamp] [--consume-timestamp yyyyMMddHHmmss] [--broadcast]
 *              [--orderly] [--props] [--all-props] [--fail-times N] [--max-reconsume-times N]
 *              [--retry-delay-level L] [--poll-namesrv-ms MS] [--heartbeat-ms MS] [--wait-ms 30000]
 *              [--timeout-ms MS]
 * </pre>
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * STARTED &lt;group&gt;                                         once the consumer has started
 * ALLOC &lt;topic&gt; &lt;consumers&gt; &lt;queueIds|-&gt;                    clustering: each time this consumer's share of a
 *                                                          topic's queues changes (queue ids comma-separated)
 * RECV &lt;msgId&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;body&gt;             one per delivery (body escaped, see Harness)
 * PROPS &lt;msgId&gt; topic=&lt;t&gt; tags=&lt;t&gt; keys=&lt;k&gt; reconsume=&lt;n&gt; offsetMsgId=&lt;id&gt; born=&lt;ms&gt; store=&lt;ms&gt;
 *       recv=&lt;ms&gt; delay=&lt;level|-&gt;                          with --props, after each RECV
 * ALLPROPS &lt;msgId&gt; sysFlag= storeSize= bodyCRC= flag= bornHost= storeHost= commitLogOffset= prepared=
 *       p.&lt;name&gt;=&lt;value&gt;...                                with --all-props: the stored record's fields and every
 *                                                          property, sorted (values escaped, spaces as \x20)
 * TIMER &lt;msgId&gt; recv=&lt;ms&gt; due=&lt;ms&gt; ...              after each RECV of a timer message: its due time, the
 *                                                          timer properties the broker set (see Timer.line)
 * SEQ &lt;orderKey&gt; &lt;seq&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;msgId&gt;     after each RECV of a message with the ORDER_KEY and
 *                                                          SEQ properties (Producer --order-keys)
 * RETRY &lt;msgId&gt; &lt;reconsumeTimes&gt;                          a delivery this consumer failed on purpose
 * OK received=&lt;n&gt;                                        exit 0
 * </pre>
 *
 * It exits as soon as {@code --count} deliveries arrived (duplicates and failed deliveries count),
 * or after {@code --wait-ms}, or on SIGTERM (shutting the consumer down cleanly, which persists
 * its offsets and unregisters it): with fewer than {@code --count} deliveries then, it prints
 * {@code ERR received=<n> expected=<count>} and exits 1. {@code --count 0} consumes until the wait
 * is over or SIGTERM and exits 0.
 *
 * <p>{@code --fail-times N}: the first N deliveries of each message (by msgId) fail — the
 * concurrent listener returns RECONSUME_LATER (the client sends the message back to the broker with
 * delay level {@code --retry-delay-level}, default 0: the broker's choice, 3 + reconsumeTimes), the
 * orderly one SUSPEND_CURRENT_QUEUE_A_MOMENT. {@code --max-reconsume-times} is the consumer's
 * setting (after that many failed re-deliveries the broker moves the message to {@code %DLQ%G}).
 * {@code --poll-namesrv-ms} sets the client's route poll interval (default 30 s), so that topics
 * created after the start (such as {@code %RETRY%G}) are found quickly. {@code --heartbeat-ms} sets
 * the heartbeat interval (default 30 s): after a rebalance the client bumps its subscription
 * version and tells the broker in a heartbeat, but that heartbeat is skipped when another one holds
 * the client's heartbeat lock, and until the next one the broker answers every pull with
 * SUBSCRIPTION_NOT_LATEST (both versions log "lock heartBeat, but failed"; 4.9.8 then delivered
 * ~3 s after the start, 5.3.3 ~20 s, in about one start of three).
 */
public final class PushConsumer {
    private static final String USAGE = "--namesrv HOST:PORT --topic TOPIC --group G --count N [--expr EXPR]"
            + " [--from first|last|timestamp] [--consume-timestamp yyyyMMddHHmmss] [--broadcast] [--orderly]"
            + " [--props] [--all-props] [--fail-times N] [--max-reconsume-times N] [--retry-delay-level L]"
            + " [--poll-namesrv-ms MS] [--heartbeat-ms MS] [--wait-ms MS] [--timeout-ms MS]";

    private PushConsumer() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "group", "count", "expr", "from", "wait-ms", "timeout-ms",
                        "consume-timestamp", "fail-times", "max-reconsume-times", "retry-delay-level",
                        "poll-namesrv-ms", "heartbeat-ms"},
                    new String[] {"broadcast", "props", "all-props", "orderly"});
            args.required("namesrv");
            args.required("topic");
            args.required("group");
            args.required("count");
            String from = args.get("from", "first");
            if (!from.equals("first") && !from.equals("last") && !from.equals("timestamp")) {
                throw new Args.UsageException("--from wants first, last or timestamp, got " + from);
            }
            if (from.equals("timestamp")) {
                args.required("consume-timestamp");
            }
        } catch (Args.UsageException e) {
            Harness.usage("PushConsumer", e.getMessage(), USAGE);
            return;
        }
        long waitMs = args.getLong("wait-ms", 30_000);
        Harness.init("PushConsumer", args.getLong("timeout-ms", waitMs + 20_000));
        CountDownLatch done = new CountDownLatch(1);
        Harness.Termination termination = Harness.onSigterm(done::countDown);
        termination.exit(run(args, waitMs, done));
    }

    private static int run(Args args, long waitMs, CountDownLatch done) {
        int count = args.getInt("count", 0);
        boolean props = args.flag("props");
        boolean allProps = args.flag("all-props");
        int failTimes = args.getInt("fail-times", 0);
        int retryDelayLevel = args.getInt("retry-delay-level", 0);
        String group = args.required("group");
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(args.required("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName("push-consumer-" + ProcessHandle.current().pid());
        // Let deliveries in progress finish on shutdown (the default interrupts them, and a failed
        // delivery interrupted while being sent back is then re-sent as a new retry message).
        consumer.setAwaitTerminationMillisWhenShutdown(5_000);
        switch (args.get("from", "first")) {
            case "first":
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                break;
            case "last":
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
                break;
            default:
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_TIMESTAMP);
                consumer.setConsumeTimestamp(args.required("consume-timestamp"));
        }
        if (args.get("max-reconsume-times", null) != null) {
            consumer.setMaxReconsumeTimes(args.getInt("max-reconsume-times", -1));
        }
        if (args.get("poll-namesrv-ms", null) != null) {
            consumer.setPollNameServerInterval(args.getInt("poll-namesrv-ms", 30_000));
        }
        if (args.get("heartbeat-ms", null) != null) {
            consumer.setHeartbeatBrokerInterval(args.getInt("heartbeat-ms", 30_000));
        }
        if (args.flag("broadcast")) {
            // MessageModel moved package between 4.x and 5.x; reach it through the getter's type.
            var clustering = consumer.getMessageModel();
            consumer.setMessageModel(Enum.valueOf(clustering.getDeclaringClass(), "BROADCASTING"));
        } else {
            consumer.setAllocateMessageQueueStrategy(new PrintingAllocation());
        }
        AtomicInteger received = new AtomicInteger();
        Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();
        // Prints one delivery; true when it is to fail on purpose.
        java.util.function.Predicate<MessageExt> deliver = m -> {
            long now = System.currentTimeMillis();
            StringBuilder sb = new StringBuilder();
            sb.append("RECV ").append(m.getMsgId()).append(' ').append(m.getQueueId()).append(' ')
                    .append(m.getQueueOffset()).append(' ').append(Harness.escapeBody(m.getBody()));
            if (props) {
                sb.append("\nPROPS ").append(m.getMsgId()).append(" topic=").append(m.getTopic())
                        .append(" tags=").append(m.getTags()).append(" keys=").append(m.getKeys())
                        .append(" reconsume=").append(m.getReconsumeTimes())
                        .append(" offsetMsgId=").append(offsetMsgId(m))
                        .append(" born=").append(m.getBornTimestamp())
                        .append(" store=").append(m.getStoreTimestamp())
                        .append(" recv=").append(now)
                        .append(" delay=").append(orDash(m.getProperty("DELAY")));
            }
            if (allProps) {
                sb.append("\nALLPROPS ").append(m.getMsgId()).append(" sysFlag=").append(m.getSysFlag())
                        .append(" storeSize=").append(m.getStoreSize()).append(" bodyCRC=").append(m.getBodyCRC())
                        .append(" flag=").append(m.getFlag()).append(" bornHost=").append(m.getBornHostString())
                        .append(" storeHost=").append(m.getStoreHost()).append(" commitLogOffset=")
                        .append(m.getCommitLogOffset()).append(" prepared=").append(m.getPreparedTransactionOffset());
                for (Map.Entry<String, String> e : new java.util.TreeMap<>(m.getProperties()).entrySet()) {
                    sb.append(" p.").append(e.getKey()).append('=')
                            .append(Harness.escapeBody(e.getValue().getBytes(java.nio.charset.StandardCharsets.UTF_8))
                                    .replace(" ", "\\x20"));
                }
            }
            String timer = Timer.line(m, now);
            if (timer != null) {
                sb.append('\n').append(timer);
            }
            String orderKey = m.getUserProperty("ORDER_KEY");
            if (orderKey != null) {
                sb.append("\nSEQ ").append(orderKey).append(' ').append(m.getUserProperty("SEQ")).append(' ')
                        .append(m.getQueueId()).append(' ').append(m.getQueueOffset()).append(' ')
                        .append(m.getMsgId());
            }
            int delivery = deliveries.computeIfAbsent(m.getMsgId(), k -> new AtomicInteger()).incrementAndGet();
            boolean fail = delivery <= failTimes;
            if (fail) {
                sb.append("\nRETRY ").append(m.getMsgId()).append(' ').append(m.getReconsumeTimes());
            }
            synchronized (Harness.out) {
                Harness.out.println(sb);
            }
            int n = received.incrementAndGet();
            if (count > 0 && n >= count) {
                done.countDown();
            }
            return fail;
        };
        if (args.flag("orderly")) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                for (MessageExt m : msgs) {
                    if (deliver.test(m)) {
                        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                    }
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                boolean fail = false;
                for (MessageExt m : msgs) {
                    fail |= deliver.test(m);
                }
                if (fail) {
                    context.setDelayLevelWhenNextConsume(retryDelayLevel);
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }
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

    private static String orDash(String s) {
        return s == null || s.isEmpty() ? "-" : s;
    }

    /**
     * The default strategy (AllocateMessageQueueAveragely), printing {@code ALLOC} whenever this
     * consumer's share of a topic changes, so a test can see a rebalance happen.
     */
    private static final class PrintingAllocation implements AllocateMessageQueueStrategy {
        private final AllocateMessageQueueAveragely inner = new AllocateMessageQueueAveragely();
        private final Map<String, String> last = new ConcurrentHashMap<>();

        @Override
        public List<MessageQueue> allocate(String consumerGroup, String currentCID, List<MessageQueue> mqAll,
                List<String> cidAll) {
            List<MessageQueue> mine = inner.allocate(consumerGroup, currentCID, mqAll, cidAll);
            if (mqAll != null && !mqAll.isEmpty()) {
                String topic = mqAll.get(0).getTopic();
                String ids = mine == null || mine.isEmpty() ? "-"
                        : mine.stream().map(MessageQueue::getQueueId).sorted().map(String::valueOf)
                                .collect(Collectors.joining(","));
                String line = "ALLOC " + topic + " " + (cidAll == null ? 0 : cidAll.size()) + " " + ids;
                if (!line.equals(last.put(topic, line))) {
                    synchronized (Harness.out) {
                        Harness.out.println(line);
                    }
                }
            }
            return mine;
        }

        @Override
        public String getName() {
            return inner.getName();
        }
    }
}
