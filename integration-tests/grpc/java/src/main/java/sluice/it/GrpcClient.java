package sluice.it;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientConfigurationBuilder;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * One case of the gRPC proxy tests on the official Java SDK (rocketmq-client-java), as
 * {@code ../README.md} describes them for every SDK: the same arguments, the same messages, the
 * same result lines on stdout.
 *
 * <pre>
 * GrpcClient CASE --endpoint 127.0.0.1:PORT --topic T --group G [--timeout-ms 120000] [--consume no] [--access-key AK --secret-key SK]
 *   CASE: normal | fifo | delay | transaction | simple | push | priority | listen | recall
 * </pre>
 *
 * {@code --consume no}: the cases that send and then consume (normal, fifo, delay) only send,
 * and print {@code OK sent=N} once every send succeeded (the test reads the messages back).
 *
 * Exit 0 once the case saw everything it waits for (an {@code OK} line), 1 on failure ({@code
 * ERR ...}), 2 on a usage error, 124 when the watchdog fires. {@code recall} (this program only)
 * sends 2 delay messages and recalls the first. {@code listen} (this program only)
 * is a push consumer that prints {@code STARTED}, a {@code RECV} line per delivery, and runs
 * until it is killed: the test asks the broker about it meanwhile.
 */
public final class GrpcClient {
    private static final PrintStream OUT =
            new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    /** The SimpleConsumer's invisible duration: the proxy's minimum for a receive is 10 s. */
    private static final Duration INVISIBLE = Duration.ofSeconds(10);
    /** How long a case waits for its deliveries. */
    private static final long WAIT_MS = 60_000;

    private final ClientServiceProvider provider = ClientServiceProvider.loadService();
    private final ClientConfiguration config;
    private final String topic;
    private final String group;
    /** Whether the send-then-consume cases consume ({@code --consume}, yes by default). */
    private final boolean consume;

    private GrpcClient(String endpoint, String topic, String group, boolean consume,
            String accessKey, String secretKey) {
        ClientConfigurationBuilder builder = ClientConfiguration.newBuilder()
                .setEndpoints(endpoint)
                .enableSsl(false)
                .setRequestTimeout(Duration.ofSeconds(10));
        if (accessKey != null) {
            builder.setCredentialProvider(new StaticSessionCredentialsProvider(accessKey,
                    secretKey == null ? "" : secretKey));
        }
        this.config = builder.build();
        this.topic = topic;
        this.group = group;
        this.consume = consume;
    }

    public static void main(String[] argv) {
        if (argv.length < 1) {
            usage("missing CASE");
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                usage("bad argument " + argv[i]);
            }
            opts.put(argv[i].substring(2), argv[i + 1]);
        }
        for (String k : opts.keySet()) {
            if (!Set.of("endpoint", "topic", "group", "timeout-ms", "consume", "access-key", "secret-key").contains(k)) {
                usage("unknown option --" + k);
            }
        }
        String endpoint = opts.get("endpoint");
        if (endpoint == null || !endpoint.startsWith("127.")) {
            usage("--endpoint must be a loopback address");
        }
        long timeoutMs = Long.parseLong(opts.getOrDefault("timeout-ms", "120000"));
        watchdog(timeoutMs);
        String consume = opts.getOrDefault("consume", "yes");
        if (!consume.equals("yes") && !consume.equals("no")) {
            usage("--consume must be yes or no");
        }
        GrpcClient c = new GrpcClient(endpoint, need(opts, "topic"), need(opts, "group"), consume.equals("yes"),
                opts.get("access-key"), opts.get("secret-key"));
        int code;
        try {
            code = c.run(argv[0]) ? 0 : 1;
        } catch (Throwable e) {
            OUT.println("ERR " + oneLine(e));
            code = 1;
        }
        OUT.flush();
        // The SDK's threads (gRPC, schedulers) are not all daemons: leave without them.
        Runtime.getRuntime().halt(code);
    }

    private boolean run(String kase) throws Exception {
        switch (kase) {
            case "normal":
                return normal();
            case "fifo":
                return fifo();
            case "delay":
                return delay();
            case "transaction":
                return transaction();
            case "simple":
                return simple();
            case "push":
                return push();
            case "priority":
                return priority();
            case "listen":
                return listen();
            case "recall":
                return recall();
            default:
                usage("unknown case " + kase);
                return false;
        }
    }

    // ------------------------------------------------------------------------------ the cases

    /** 8 messages with a tag, keys and a property; a SimpleConsumer receives and acks them all. */
    private boolean normal() throws Exception {
        List<String> bodies = new ArrayList<>();
        try (Producer p = producer(null)) {
            for (int i = 0; i < 8; i++) {
                String body = "normal-" + i;
                Message m = message(body).setTag("TagA").setKeys("key-" + i).addProperty("idx", "" + i).build();
                sent(i, p.send(m), "");
                bodies.add(body);
            }
        }
        return consumeAll(bodies, "TagA");
    }

    /** 3 message groups of 4, interleaved; received and acked in the order given. */
    private boolean fifo() throws Exception {
        List<String> bodies = new ArrayList<>();
        try (Producer p = producer(null)) {
            int i = 0;
            for (int j = 0; j < 4; j++) {
                for (int g = 0; g < 3; g++) {
                    String body = "fifo-" + g + "-" + j;
                    sent(i++, p.send(message(body).setMessageGroup("group-" + g).build()), "");
                    bodies.add(body);
                }
            }
        }
        return consumeAll(bodies, "*");
    }

    /** 3 messages due 4, 5 and 6 s after the send. */
    private boolean delay() throws Exception {
        List<String> bodies = new ArrayList<>();
        try (Producer p = producer(null)) {
            for (int i = 0; i < 3; i++) {
                String body = "delay-" + i;
                long due = System.currentTimeMillis() + 4000 + 1000L * i;
                sent(i, p.send(message(body).setDeliveryTimestamp(due).build()), " deliver=" + due);
                bodies.add(body);
            }
        }
        return consumeAll(bodies, "*");
    }

    /**
     * 2 messages due 5 s after the send; the first is recalled with its send's recall handle
     * ({@code RECALL <body> <msgId>}); the consumer receives the second and lingers 8 s more (past
     * the first's due time).
     */
    private boolean recall() throws Exception {
        List<String> bodies = new ArrayList<>();
        try (Producer p = producer(null)) {
            List<org.apache.rocketmq.client.apis.producer.SendReceipt> receipts = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                String body = "recall-" + i;
                long due = System.currentTimeMillis() + 5000;
                var receipt = p.send(message(body).setDeliveryTimestamp(due).build());
                sent(i, receipt, " deliver=" + due);
                receipts.add(receipt);
            }
            var recalled = p.recallMessage(topic, receipts.get(0).getRecallHandle());
            OUT.println("RECALL recall-0 " + recalled.getMessageId());
            bodies.add("recall-1");
        }
        return consumeAll(bodies, "*", 8000);
    }

    /**
     * 6 transactional messages: i % 3 == 0 committed, 1 rolled back, 2 left open; a check-back
     * answers the local outcome (COMMIT for the open ones). Then the consumer receives the 4
     * committed ones and lingers 3 s.
     */
    private boolean transaction() throws Exception {
        Set<String> checked = ConcurrentHashMap.newKeySet();
        List<String> expected = new ArrayList<>();
        Producer p = producer(view -> {
            String body = body(view);
            checked.add(body);
            boolean rollback = body.endsWith("-1") || body.endsWith("-4");
            OUT.println("CHECK " + body + " " + view.getMessageId() + " answer=" + (rollback ? "ROLLBACK" : "COMMIT"));
            return rollback ? TransactionResolution.ROLLBACK : TransactionResolution.COMMIT;
        });
        try {
            for (int i = 0; i < 6; i++) {
                String body = "tx-" + i;
                Transaction tx = p.beginTransaction();
                SendReceipt r = p.send(message(body).build(), tx);
                String local = i % 3 == 0 ? "commit" : i % 3 == 1 ? "rollback" : "unknown";
                sent(i, r, " tx=" + local);
                if (i % 3 == 0) {
                    tx.commit();
                } else if (i % 3 == 1) {
                    tx.rollback();
                }
                if (i % 3 != 1) {
                    expected.add(body);
                }
            }
            boolean ok = consumeAll(expected, "*", 3000);
            long deadline = System.currentTimeMillis() + WAIT_MS;
            Set<String> open = Set.of("tx-2", "tx-5");
            while (!checked.containsAll(open) && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            if (!checked.containsAll(open)) {
                OUT.println("ERR checked=" + new java.util.TreeSet<>(checked) + " expected tx-2 and tx-5");
                return false;
            }
            return ok;
        } finally {
            p.close();
        }
    }

    /**
     * 3 messages received: simple-0 acked, simple-1's invisible duration changed to 2 s, simple-2
     * left alone; both come back (attempt 2) and are acked; then 2 s more with nothing.
     */
    private boolean simple() throws Exception {
        try (Producer p = producer(null)) {
            for (int i = 0; i < 3; i++) {
                sent(i, p.send(message("simple-" + i).build()), "");
            }
        }
        try (SimpleConsumer c = simpleConsumer("*")) {
            Map<String, Integer> seen = new HashMap<>();
            long deadline = System.currentTimeMillis() + WAIT_MS;
            long lingerUntil = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(deadline, lingerUntil)) {
                for (MessageView v : receive(c)) {
                    String body = body(v);
                    recv(v);
                    int n = seen.merge(body, 1, Integer::sum);
                    if (body.equals("simple-1") && n == 1) {
                        c.changeInvisibleDuration(v, Duration.ofSeconds(2));
                        OUT.println("CHANGE " + body + " " + v.getMessageId() + " ms=2000 at=" + System.currentTimeMillis());
                    } else if (body.equals("simple-2") && n == 1) {
                        OUT.println("SKIP " + body + " " + v.getMessageId());
                    } else {
                        ack(c, v);
                    }
                }
                if (lingerUntil == Long.MAX_VALUE && seen.getOrDefault("simple-0", 0) >= 1
                        && seen.getOrDefault("simple-1", 0) >= 2 && seen.getOrDefault("simple-2", 0) >= 2) {
                    lingerUntil = System.currentTimeMillis() + 2000;
                }
            }
            if (lingerUntil == Long.MAX_VALUE) {
                OUT.println("ERR seen=" + seen);
                return false;
            }
            OUT.println("OK seen=" + new java.util.TreeMap<>(seen));
            return true;
        }
    }

    /**
     * A PushConsumer started first; 5 messages; push-0 fails its first delivery and must come
     * back; every message consumed successfully once.
     */
    private boolean push() throws Exception {
        Set<String> done = ConcurrentHashMap.newKeySet();
        Set<String> failed = ConcurrentHashMap.newKeySet();
        PushConsumer c = provider.newPushConsumerBuilder()
                .setClientConfiguration(config)
                .setConsumerGroup(group)
                .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
                .setMessageListener(v -> {
                    String body = body(v);
                    recv(v);
                    if (body.equals("push-0") && failed.add(body)) {
                        OUT.println("FAIL " + body + " " + v.getMessageId());
                        return ConsumeResult.FAILURE;
                    }
                    done.add(body);
                    return ConsumeResult.SUCCESS;
                })
                .build();
        try {
            OUT.println("STARTED " + group);
            Thread.sleep(2000);
            try (Producer p = producer(null)) {
                for (int i = 0; i < 5; i++) {
                    sent(i, p.send(message("push-" + i).build()), "");
                }
            }
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (done.size() < 5 && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            if (done.size() < 5) {
                OUT.println("ERR consumed=" + done.size() + " expected=5");
                return false;
            }
            Thread.sleep(2000);
            OUT.println("OK consumed=" + done.size());
            return true;
        } finally {
            c.close();
        }
    }

    /**
     * A push consumer of the topic that stays up, printing what it is given (by its own
     * receives, or by the broker through {@code VerifyMessageCommand}), until killed.
     */
    private boolean listen() throws Exception {
        PushConsumer c = provider.newPushConsumerBuilder()
                .setClientConfiguration(config)
                .setConsumerGroup(group)
                .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
                .setMessageListener(v -> {
                    recv(v);
                    return ConsumeResult.SUCCESS;
                })
                .build();
        try {
            OUT.println("STARTED " + group);
            Thread.sleep(Long.MAX_VALUE);
            return true;
        } finally {
            c.close();
        }
    }

    /**
     * A backlog of 16 priority messages, 4 rounds of priorities 0, 1, 2, 3 (`prio-P-R`), sent
     * before the SimpleConsumer starts; it receives and acks them all (the test checks that the
     * higher priorities came first).
     */
    private boolean priority() throws Exception {
        List<String> bodies = new ArrayList<>();
        try (Producer p = producer(null)) {
            int i = 0;
            for (int r = 0; r < 4; r++) {
                for (int prio = 0; prio < 4; prio++) {
                    String body = "prio-" + prio + "-" + r;
                    sent(i++, p.send(message(body).setPriority(prio).build()), " priority=" + prio);
                    bodies.add(body);
                }
            }
        }
        return consumeAll(bodies, "*");
    }

    // ------------------------------------------------------------------------------ the parts

    private Producer producer(org.apache.rocketmq.client.apis.producer.TransactionChecker checker) throws Exception {
        var b = provider.newProducerBuilder().setClientConfiguration(config).setTopics(topic);
        if (checker != null) {
            b.setTransactionChecker(checker);
        }
        return b.build();
    }

    private MessageBuilder message(String body) {
        return provider.newMessageBuilder().setTopic(topic).setBody(body.getBytes(StandardCharsets.UTF_8));
    }

    private SimpleConsumer simpleConsumer(String tag) throws Exception {
        return provider.newSimpleConsumerBuilder()
                .setClientConfiguration(config)
                .setConsumerGroup(group)
                .setAwaitDuration(Duration.ofSeconds(5))
                .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression(tag, FilterExpressionType.TAG)))
                .build();
    }

    private boolean consumeAll(List<String> bodies, String tag) throws Exception {
        return consumeAll(bodies, tag, 0);
    }

    /** Receives and acks (in order) until every body of `bodies` came, then `lingerMs` more. */
    private boolean consumeAll(List<String> bodies, String tag, long lingerMs) throws Exception {
        if (!consume) {
            OUT.println("OK sent=" + bodies.size());
            return true;
        }
        Set<String> want = new HashSet<>(bodies);
        Set<String> got = new HashSet<>();
        try (SimpleConsumer c = simpleConsumer(tag)) {
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (!got.containsAll(want) && System.currentTimeMillis() < deadline) {
                for (MessageView v : receive(c)) {
                    got.add(body(v));
                    recv(v);
                    ack(c, v);
                }
            }
            long lingerUntil = System.currentTimeMillis() + lingerMs;
            while (lingerMs > 0 && System.currentTimeMillis() < lingerUntil) {
                for (MessageView v : receive(c)) {
                    got.add(body(v));
                    recv(v);
                    ack(c, v);
                }
            }
        }
        if (!got.containsAll(want)) {
            Set<String> missing = new HashSet<>(want);
            missing.removeAll(got);
            OUT.println("ERR missing=" + new java.util.TreeSet<>(missing));
            return false;
        }
        OUT.println("OK received=" + got.size());
        return true;
    }

    /**
     * One receive; a failed one prints {@code RECVERR <error>} (the test fails on it) and counts
     * as none, so the case goes on as the other SDKs' programs do.
     */
    private static List<MessageView> receive(SimpleConsumer c) {
        try {
            return c.receive(16, INVISIBLE);
        } catch (Exception e) {
            OUT.println("RECVERR " + oneLine(e));
            return List.of();
        }
    }

    private static void ack(SimpleConsumer c, MessageView v) throws Exception {
        c.ack(v);
        OUT.println("ACK " + body(v) + " " + v.getMessageId());
    }

    private static void sent(int i, SendReceipt r, String extra) {
        OUT.println("SENT " + i + " " + r.getMessageId() + " at=" + System.currentTimeMillis() + extra);
    }

    /** `RECV <body> <msgId> attempt= tag= keys= group= deliver= born= recv= topic= idx= priority=` */
    private static void recv(MessageView v) {
        String keys = v.getKeys().isEmpty() ? "-" : String.join(",", v.getKeys());
        OUT.println("RECV " + body(v) + " " + v.getMessageId()
                + " attempt=" + v.getDeliveryAttempt()
                + " tag=" + v.getTag().orElse("-")
                + " keys=" + keys
                + " group=" + v.getMessageGroup().orElse("-")
                + " deliver=" + v.getDeliveryTimestamp().map(String::valueOf).orElse("-")
                + " born=" + v.getBornTimestamp()
                + " recv=" + System.currentTimeMillis()
                + " topic=" + v.getTopic()
                + " idx=" + v.getProperties().getOrDefault("idx", "-")
                + " priority=" + v.getPriority().map(String::valueOf).orElse("-"));
    }

    private static String body(MessageView v) {
        ByteBuffer b = v.getBody().duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static String need(Map<String, String> opts, String key) {
        String v = opts.get(key);
        if (v == null) {
            usage("missing --" + key);
        }
        return v;
    }

    private static void usage(String why) {
        OUT.println("ERR usage: " + why);
        OUT.flush();
        Runtime.getRuntime().halt(2);
    }

    private static void watchdog(long ms) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                return;
            }
            OUT.println("ERR timeout after " + ms + "ms");
            OUT.flush();
            Runtime.getRuntime().halt(124);
        }, "sluice-it-watchdog");
        t.setDaemon(true);
        t.start();
    }

    /** `SimpleName: message <- CauseSimpleName: message ...` on one line. */
    private static String oneLine(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- ");
            }
            sb.append(t.getClass().getSimpleName()).append(": ").append(String.valueOf(t.getMessage()).replace('\n', ' '));
            if (t.getCause() == t) {
                break;
            }
        }
        return sb.toString();
    }
}
