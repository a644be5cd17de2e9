package sluice.it;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.rocketmq.client.consumer.AckCallback;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.PopCallback;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.client.consumer.PopStatus;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.constant.ConsumeInitMode;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ChangeInvisibleTimeRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;

/**
 * POP through the 5.x client's low-level API ({@code MQClientAPIImpl.popMessageAsync},
 * {@code ackMessageAsync}, {@code batchAckMessageAsync}, {@code changeInvisibleTimeAsync}, the
 * client instance of a producer), and raw requests for the answers the API hides: one step per
 * run, on a topic of its own.
 *
 * <pre>
 * PopRaw --namesrv 127.0.0.1:9876 --topic T --group G --step noack|ack|change|errors [--count 3]
 *        [--invisible-ms 3000] [--wait-ms 40000] [--linger-ms 10000] [--missing-topic T2] [--timeout-ms MS]
 * </pre>
 *
 * <ul>
 *   <li><b>noack</b>: sends {@code --count} messages, pops them all (invisible time
 *       {@code --invisible-ms}) and does not ack; pops on until each came back (phase
 *       {@code again}), acking each as it comes (its real topic is the retry topic), then pops for
 *       {@code --linger-ms} (phase {@code linger}: nothing may come).
 *   <li><b>ack</b>: sends {@code 2 * --count}, pops them all, acks the first {@code --count} one
 *       by one (ACK_MESSAGE) and the others in one BATCH_ACK_MESSAGE, then pops for
 *       {@code --linger-ms} (nothing may come).
 *   <li><b>change</b>: sends 2; pops one with invisible time 3000 ms and one with 60000 ms,
 *       changes the first to 10000 ms and the second to 3000 ms at once
 *       (CHANGE_MESSAGE_INVISIBLETIME), pops until both came back, acking each as it comes, then
 *       pops for {@code --linger-ms}.
 *   <li><b>errors</b>: raw POP_MESSAGE / ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME requests on
 *       {@code --topic} (empty) and {@code --missing-topic} (absent): one {@code RAW} line each,
 *       with the answer's code, the time it took and its remark.
 * </ul>
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * SENT &lt;i&gt; &lt;msgId&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;epochMs&gt;
 * POP phase=&lt;p&gt; i=&lt;i&gt; reconsume=&lt;n&gt; topic=&lt;t&gt; queue=&lt;q&gt; offset=&lt;o&gt; recv=&lt;epochMs&gt; ck=&lt;POP_CK, ',' for ' '&gt;
 *     first=&lt;1ST_POP_TIME|-&gt; msgId=&lt;id&gt;         one per popped message (phase: first, again, linger)
 * ACK i=&lt;i&gt; kind=single|batch status=&lt;OK|NO_EXIST|EXC&gt; at=&lt;epochMs&gt;
 * CHANGE i=&lt;i&gt; from=&lt;ms&gt; to=&lt;ms&gt; at=&lt;epochMs&gt; status=&lt;OK|NO_EXIST|EXC&gt; ck=&lt;new handle&gt;
 * RAW case=&lt;name&gt; code=&lt;code&gt; elapsed=&lt;ms&gt; msgs=&lt;n&gt; remark=&lt;remark, one line&gt;
 * OK step=&lt;step&gt;   |  ERR ...
 * </pre>
 *
 * Message i has body {@code raw-<i>}. The program only reports; the Rust test judges.
 */
public final class PopRaw {
    private static final String USAGE = "--namesrv HOST:PORT --topic T --group G --step noack|ack|change|errors"
            + " [--count N] [--invisible-ms MS] [--wait-ms MS] [--linger-ms MS] [--missing-topic T] [--timeout-ms MS]";
    private static final long RPC_TIMEOUT_MS = 3_000;

    private final String topic;
    private final String group;
    private final DefaultMQProducer producer;
    private final MQClientAPIImpl api;
    private final String brokerName;
    private final String brokerAddr;

    private PopRaw(String topic, String group, DefaultMQProducer producer, MQClientAPIImpl api, String brokerName,
            String brokerAddr) {
        this.topic = topic;
        this.group = group;
        this.producer = producer;
        this.api = api;
        this.brokerName = brokerName;
        this.brokerAddr = brokerAddr;
    }

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "group", "step", "count", "invisible-ms", "wait-ms", "linger-ms",
                        "missing-topic", "timeout-ms"},
                    new String[] {});
            args.required("namesrv");
            args.required("topic");
            args.required("group");
            String step = args.required("step");
            if (!Set.of("noack", "ack", "change", "errors").contains(step)) {
                throw new Args.UsageException("--step wants noack, ack, change or errors, got " + step);
            }
            if (step.equals("errors")) {
                args.required("missing-topic");
            }
        } catch (Args.UsageException e) {
            Harness.usage("PopRaw", e.getMessage(), USAGE);
            return;
        }
        long waitMs = args.getLong("wait-ms", 40_000);
        long lingerMs = args.getLong("linger-ms", 10_000);
        Harness.init("PopRaw", args.getLong("timeout-ms", waitMs + lingerMs + 30_000));
        DefaultMQProducer producer = new DefaultMQProducer("PopRawP-" + ProcessHandle.current().pid());
        try {
            producer.setNamesrvAddr(args.required("namesrv"));
            producer.setVipChannelEnabled(false);
            producer.setInstanceName("pop-raw-" + ProcessHandle.current().pid());
            producer.start();
            MQClientAPIImpl api = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
            String topic = args.required("topic");
            TopicRouteData route = api.getTopicRouteInfoFromNameServer(topic, RPC_TIMEOUT_MS);
            BrokerData broker = route.getBrokerDatas().get(0);
            PopRaw raw = new PopRaw(topic, args.required("group"), producer, api, broker.getBrokerName(),
                    broker.getBrokerAddrs().get(0L));
            String step = args.required("step");
            int count = args.getInt("count", 3);
            long invisibleMs = args.getLong("invisible-ms", 3_000);
            long deadline = System.currentTimeMillis() + waitMs;
            switch (step) {
                case "noack":
                    raw.noack(count, invisibleMs, deadline, lingerMs);
                    break;
                case "ack":
                    raw.ack(count, invisibleMs, deadline, lingerMs);
                    break;
                case "change":
                    raw.change(deadline, lingerMs);
                    break;
                default:
                    raw.errors(args.required("missing-topic"));
            }
            Harness.out.println("OK step=" + step);
            producer.shutdown();
            Harness.exit(Harness.EXIT_OK);
        } catch (Exception e) {
            Harness.out.println("ERR " + Harness.describe(e));
            Harness.exit(Harness.EXIT_FAIL);
        }
    }

    // ------------------------------------------------------------------------------- the steps

    private void noack(int count, long invisibleMs, long deadline, long lingerMs) throws Exception {
        send(0, count);
        List<MessageExt> first = popUntil("first", invisibleMs, 2_000, deadline, got -> indices(got).size() >= count);
        Set<Integer> wanted = indices(first);
        popUntil("again", invisibleMs, 2_000, deadline, got -> indices(got).containsAll(wanted), 32, this::ackOne);
        popUntil("linger", invisibleMs, 2_000, System.currentTimeMillis() + lingerMs, got -> false);
    }

    private void ack(int count, long invisibleMs, long deadline, long lingerMs) throws Exception {
        send(0, 2 * count);
        List<MessageExt> got = popUntil("first", invisibleMs, 2_000, deadline,
                g -> indices(g).size() >= 2 * count);
        List<MessageExt> batch = new ArrayList<>();
        for (MessageExt m : got) {
            if (PopRpcLog.index(m) < count) {
                ackOne(m);
            } else {
                batch.add(m);
            }
        }
        ackBatch(batch);
        popUntil("linger", invisibleMs, 2_000, System.currentTimeMillis() + lingerMs, g -> false);
    }

    private void change(long deadline, long lingerMs) throws Exception {
        send(0, 2);
        List<MessageExt> shortOne = popUntil("first", 3_000, 2_000, deadline, g -> !g.isEmpty(), 1, KEEP);
        List<MessageExt> longOne = popUntil("first", 60_000, 2_000, deadline, g -> !g.isEmpty(), 1, KEEP);
        if (shortOne.isEmpty() || longOne.isEmpty()) {
            throw new IllegalStateException("could not pop both messages");
        }
        changeOne(shortOne.get(0), 3_000, 10_000);
        changeOne(longOne.get(0), 60_000, 3_000);
        Set<Integer> wanted = new HashSet<>(indices(shortOne));
        wanted.addAll(indices(longOne));
        popUntil("again", 3_000, 2_000, deadline, g -> indices(g).containsAll(wanted), 32, this::ackOne);
        popUntil("linger", 3_000, 2_000, System.currentTimeMillis() + lingerMs, g -> false);
    }

    private void errors(String missingTopic) throws Exception {
        long now = System.currentTimeMillis();
        rawPop("missing_topic", missingTopic, 32, 0, now);
        rawPop("max_33", topic, 33, 0, System.currentTimeMillis());
        rawPop("born_too_old", topic, 32, 1_000, System.currentTimeMillis() - 10_000);
        rawPop("empty_no_poll", topic, 32, 0, System.currentTimeMillis());
        rawPop("empty_poll", topic, 32, 3_000, System.currentTimeMillis());
        rawAck("ack_missing_topic", missingTopic, 0, 0);
        rawAck("ack_bad_queue", topic, 99, 0);
        rawAck("ack_bad_offset", topic, 0, 5);
        rawChange("change_missing_topic", missingTopic, 0, 0);
        rawChange("change_bad_queue", topic, 99, 0);
        rawChange("change_bad_offset", topic, 0, 5);
        // A held pop woken by a message sent while it waits.
        CompletableFuture<Void> sender = CompletableFuture.runAsync(() -> {
            try {
                Thread.sleep(1_500);
                send(0, 1);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        rawPop("wake", topic, 32, 10_000, System.currentTimeMillis());
        sender.get(10, TimeUnit.SECONDS);
    }

    // ------------------------------------------------------------------------ the API calls

    private void send(int from, int to) throws Exception {
        for (int i = from; i < to; i++) {
            SendResult r = producer.send(new Message(topic, "raw", ("raw-" + i).getBytes(StandardCharsets.UTF_8)));
            Harness.out.println("SENT " + i + " " + r.getMsgId() + " " + r.getMessageQueue().getQueueId() + " "
                    + r.getQueueOffset() + " " + System.currentTimeMillis());
        }
    }

    /** Something done with each message as soon as it is popped. */
    private interface OnPop {
        void accept(MessageExt m) throws Exception;
    }

    private static final OnPop KEEP = m -> {};

    private List<MessageExt> popUntil(String phase, long invisibleMs, long pollMs, long deadline,
            Predicate<List<MessageExt>> enough) throws Exception {
        return popUntil(phase, invisibleMs, pollMs, deadline, enough, 32, KEEP);
    }

    /**
     * Pops (all queues, long polling up to pollMs, at most {@code max} a pop) until {@code enough}
     * of what came or the deadline; {@code onPop} sees each message once it is printed.
     */
    private List<MessageExt> popUntil(String phase, long invisibleMs, long pollMs, long deadline,
            Predicate<List<MessageExt>> enough, int max, OnPop onPop) throws Exception {
        List<MessageExt> got = new ArrayList<>();
        while (!enough.test(got)) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                break;
            }
            for (MessageExt m : pop(invisibleMs, Math.min(pollMs, Math.max(left, 100)), max)) {
                got.add(m);
                Harness.out.println("POP phase=" + phase + " i=" + PopRpcLog.index(m) + " reconsume="
                        + m.getReconsumeTimes() + " topic=" + m.getTopic() + " queue=" + m.getQueueId() + " offset="
                        + m.getQueueOffset() + " recv=" + System.currentTimeMillis() + " ck=" + PopRpcLog.ck(m)
                        + " first=" + PopRpcLog.orDash(m.getProperty(MessageConst.PROPERTY_FIRST_POP_TIME))
                        + " msgId=" + m.getMsgId());
                onPop.accept(m);
            }
        }
        return got;
    }

    private List<MessageExt> pop(long invisibleMs, long pollMs, int max) throws Exception {
        PopMessageRequestHeader h = popHeader(topic, max, invisibleMs, pollMs, System.currentTimeMillis());
        CompletableFuture<PopResult> done = new CompletableFuture<>();
        api.popMessageAsync(brokerName, brokerAddr, h, pollMs + 10_000, new PopCallback() {
            @Override
            public void onSuccess(PopResult popResult) {
                done.complete(popResult);
            }

            @Override
            public void onException(Throwable e) {
                done.completeExceptionally(e);
            }
        });
        PopResult r = done.get(pollMs + 15_000, TimeUnit.MILLISECONDS);
        if (r.getPopStatus() != PopStatus.FOUND || r.getMsgFoundList() == null) {
            return List.of();
        }
        return r.getMsgFoundList();
    }

    private PopMessageRequestHeader popHeader(String t, int max, long invisibleMs, long pollMs, long bornTime) {
        PopMessageRequestHeader h = new PopMessageRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(t);
        h.setQueueId(-1);
        h.setMaxMsgNums(max);
        h.setInvisibleTime(invisibleMs);
        h.setPollTime(pollMs);
        h.setBornTime(bornTime);
        h.setInitMode(ConsumeInitMode.MIN);
        h.setExpType("TAG");
        h.setExp("*");
        h.setOrder(false);
        h.setBrokerName(brokerName);
        return h;
    }

    /** ACK_MESSAGE as the push consumer sends it (DefaultMQPushConsumerImpl.ackAsync). */
    private void ackOne(MessageExt m) throws Exception {
        String extraInfo = m.getProperty(MessageConst.PROPERTY_POP_CK);
        String[] f = ExtraInfoUtil.split(extraInfo);
        AckMessageRequestHeader h = new AckMessageRequestHeader();
        h.setTopic(ExtraInfoUtil.getRealTopic(f, m.getTopic(), group));
        h.setQueueId(ExtraInfoUtil.getQueueId(f));
        h.setOffset(ExtraInfoUtil.getQueueOffset(f));
        h.setConsumerGroup(group);
        h.setExtraInfo(extraInfo);
        h.setBrokerName(brokerName);
        CompletableFuture<AckResult> done = new CompletableFuture<>();
        api.ackMessageAsync(brokerAddr, RPC_TIMEOUT_MS, callback(done), h);
        Harness.out.println("ACK i=" + PopRpcLog.index(m) + " kind=single status=" + status(done) + " at="
                + System.currentTimeMillis());
    }

    /** One BATCH_ACK_MESSAGE for all of {@code msgs} (the original topic, as the client's API wants). */
    private void ackBatch(List<MessageExt> msgs) throws Exception {
        if (msgs.isEmpty()) {
            return;
        }
        List<String> handles = new ArrayList<>();
        for (MessageExt m : msgs) {
            handles.add(m.getProperty(MessageConst.PROPERTY_POP_CK));
        }
        CompletableFuture<AckResult> done = new CompletableFuture<>();
        api.batchAckMessageAsync(brokerAddr, RPC_TIMEOUT_MS, callback(done), topic, group, handles);
        String status = status(done);
        long at = System.currentTimeMillis();
        for (MessageExt m : msgs) {
            Harness.out.println("ACK i=" + PopRpcLog.index(m) + " kind=batch status=" + status + " at=" + at);
        }
    }

    /** CHANGE_MESSAGE_INVISIBLETIME as the push consumer sends it (changePopInvisibleTimeAsync). */
    private void changeOne(MessageExt m, long from, long to) throws Exception {
        String extraInfo = m.getProperty(MessageConst.PROPERTY_POP_CK);
        String[] f = ExtraInfoUtil.split(extraInfo);
        ChangeInvisibleTimeRequestHeader h = new ChangeInvisibleTimeRequestHeader();
        h.setTopic(ExtraInfoUtil.getRealTopic(f, m.getTopic(), group));
        h.setQueueId(ExtraInfoUtil.getQueueId(f));
        h.setOffset(ExtraInfoUtil.getQueueOffset(f));
        h.setConsumerGroup(group);
        h.setExtraInfo(extraInfo);
        h.setInvisibleTime(to);
        h.setBrokerName(brokerName);
        long at = System.currentTimeMillis();
        CompletableFuture<AckResult> done = new CompletableFuture<>();
        api.changeInvisibleTimeAsync(brokerName, brokerAddr, h, RPC_TIMEOUT_MS, callback(done));
        String status = status(done);
        AckResult result = done.isCompletedExceptionally() ? null : done.getNow(null);
        String ck = result == null ? "-" : PopRpcLog.orDash(result.getExtraInfo());
        Harness.out.println("CHANGE i=" + PopRpcLog.index(m) + " from=" + from + " to=" + to + " at=" + at
                + " status=" + status + " ck=" + ck.replace(' ', ','));
    }

    private static AckCallback callback(CompletableFuture<AckResult> done) {
        return new AckCallback() {
            @Override
            public void onSuccess(AckResult ackResult) {
                done.complete(ackResult);
            }

            @Override
            public void onException(Throwable e) {
                done.completeExceptionally(e);
            }
        };
    }

    private static String status(CompletableFuture<AckResult> done) throws InterruptedException {
        try {
            AckResult r = done.get(RPC_TIMEOUT_MS + 2_000, TimeUnit.MILLISECONDS);
            return r == null ? "null" : String.valueOf(r.getStatus());
        } catch (Exception e) {
            return "EXC " + Harness.describe(e);
        }
    }

    // ------------------------------------------------------------------------- raw requests

    private void rawPop(String name, String t, int max, long pollMs, long bornTime) throws Exception {
        PopMessageRequestHeader h = popHeader(t, max, 3_000, pollMs, bornTime);
        RemotingCommand request = RemotingCommand.createRequestCommand(RequestCode.POP_MESSAGE, h);
        raw(name, request, pollMs + 10_000);
    }

    private String someHandle(String t, int queueId, long offset) {
        return ExtraInfoUtil.buildExtraInfo(offset, System.currentTimeMillis(), 3_000, 0, t, brokerName, queueId, offset);
    }

    private void rawAck(String name, String t, int queueId, long offset) throws Exception {
        AckMessageRequestHeader h = new AckMessageRequestHeader();
        h.setTopic(t);
        h.setQueueId(queueId);
        h.setOffset(offset);
        h.setConsumerGroup(group);
        h.setExtraInfo(someHandle(t, queueId, offset));
        h.setBrokerName(brokerName);
        raw(name, RemotingCommand.createRequestCommand(RequestCode.ACK_MESSAGE, h), RPC_TIMEOUT_MS);
    }

    private void rawChange(String name, String t, int queueId, long offset) throws Exception {
        ChangeInvisibleTimeRequestHeader h = new ChangeInvisibleTimeRequestHeader();
        h.setTopic(t);
        h.setQueueId(queueId);
        h.setOffset(offset);
        h.setConsumerGroup(group);
        h.setExtraInfo(someHandle(t, queueId, offset));
        h.setInvisibleTime(5_000L);
        h.setBrokerName(brokerName);
        raw(name, RemotingCommand.createRequestCommand(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, h), RPC_TIMEOUT_MS);
    }

    private void raw(String name, RemotingCommand request, long timeoutMs) throws Exception {
        long start = System.currentTimeMillis();
        RemotingCommand response = api.getRemotingClient().invokeSync(brokerAddr, request, timeoutMs);
        long elapsed = System.currentTimeMillis() - start;
        int msgs = 0;
        if (response.getCode() == 0 && request.getCode() == RequestCode.POP_MESSAGE && response.getBody() != null) {
            msgs = MessageDecoder.decodesBatch(ByteBuffer.wrap(response.getBody()), true, true, true).size();
        }
        Harness.out.println("RAW case=" + name + " code=" + response.getCode() + " elapsed=" + elapsed + " msgs=" + msgs
                + " remark=" + Harness.oneLine(PopRpcLog.orDash(response.getRemark())));
    }

    private static Set<Integer> indices(List<MessageExt> msgs) {
        Set<Integer> out = new HashSet<>();
        for (MessageExt m : msgs) {
            out.add(PopRpcLog.index(m));
        }
        return out;
    }
}
