package sluice.it;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Request-reply ({@code DefaultMQProducer.request}) with both sides in one process, as two
 * client instances (two client ids, two connections):
 *
 * <ul>
 *   <li>a responder: a push consumer of {@code --topic} that answers every request with {@code
 *       MessageUtil.createReplyMessage} ("reply:" + the request's body) sent by its own producer
 *       (SEND_REPLY_MESSAGE_V2 to {@code <cluster>_REPLY_TOPIC});
 *   <li>a requester: {@code --count} requests, one at a time, in {@code --mode} sync ({@code
 *       request(msg, timeout)}), async ({@code request(msg, callback, timeout)}) or selector
 *       ({@code request(msg, selector, arg, timeout)}, request i to queue {@code i % queues}).
 * </ul>
 *
 * <pre>
 * RequestReply --namesrv HOST:PORT --topic T --count N --mode sync|async|selector
 *              [--request-timeout-ms 15000] [--timeout-ms 120000]
 * </pre>
 *
 * <p>The 5.3.3 client's synchronous {@code request} methods return as soon as the request is
 * sent, with a RequestTimeoutException "send request message to &lt;T&gt; OK, but wait reply
 * message timeout" (its send callback counts the reply latch down): with it only async requests
 * get their replies, whichever broker serves them. The 4.9 client's work in every mode.
 *
 * <p>Before the timed requests the requester sends one plain message and waits until the
 * responder has consumed it, then has the requester send a heartbeat ({@code READY after=<ms>}):
 * a push consumer can start pulling up to one heartbeat interval late on any broker, a requester
 * is unknown to the broker (its replies refused) until its first heartbeat after it learned a
 * route, and neither is what this program measures.
 *
 * <p>Prints {@code SERVED <request body> <send status>} per reply the responder sent, {@code REPLY <i> queue=<q|-> rtt=<ms> body=<reply body> topic=<reply topic>} per
 * answered request, {@code ERR request <i> <why>} per failed one, {@code ERR reply <why>} per
 * reply the responder could not send, and {@code OK replies=<n>} (exit 0) when every request was
 * answered with its own reply, else exit 1.
 */
public final class RequestReply {
    private static final String USAGE = "--namesrv HOST:PORT --topic T --count N --mode sync|async|selector"
            + " [--request-timeout-ms MS] [--timeout-ms MS]";

    /** A plain message the responder takes as "I am consuming" rather than a request. */
    private static final String PROBE = "probe";
    /** Longer than the clients' 30 s heartbeat interval. */
    private static final long READY_TIMEOUT_MS = 45_000;

    private RequestReply() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "count", "mode", "request-timeout-ms", "timeout-ms"},
                    new String[] {});
            args.required("namesrv");
            args.required("topic");
            String mode = args.required("mode");
            if (!List.of("sync", "async", "selector").contains(mode)) {
                throw new Args.UsageException("--mode wants sync, async or selector, got " + mode);
            }
        } catch (Args.UsageException e) {
            Harness.usage("RequestReply", e.getMessage(), USAGE);
            return;
        }
        Harness.init("RequestReply", args.getLong("timeout-ms", 120_000));
        Harness.exit(run(args));
    }

    private static int run(Args args) {
        String namesrv = args.required("namesrv");
        String topic = args.required("topic");
        String mode = args.required("mode");
        int count = (int) args.getLong("count", 10);
        long requestTimeoutMs = args.getLong("request-timeout-ms", 15_000);
        long pid = ProcessHandle.current().pid();
        AtomicInteger replyErrors = new AtomicInteger();
        CountDownLatch consuming = new CountDownLatch(1);
        AtomicInteger handled = new AtomicInteger();

        DefaultMQProducer replier = new DefaultMQProducer("sluice_it_replier");
        replier.setNamesrvAddr(namesrv);
        replier.setVipChannelEnabled(false);
        replier.setInstanceName("responder-" + pid);
        DefaultMQPushConsumer responder = new DefaultMQPushConsumer("sluice_it_responder");
        responder.setNamesrvAddr(namesrv);
        responder.setVipChannelEnabled(false);
        responder.setInstanceName("responder-" + pid);
        responder.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        DefaultMQProducer requester = new DefaultMQProducer("sluice_it_requester");
        requester.setNamesrvAddr(namesrv);
        requester.setVipChannelEnabled(false);
        requester.setInstanceName("requester-" + pid);
        try {
            responder.subscribe(topic, "*");
            responder.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                for (MessageExt request : msgs) {
                    try {
                        String body = new String(request.getBody(), StandardCharsets.UTF_8);
                        if (body.equals(PROBE)) {
                            consuming.countDown();
                            continue;
                        }
                        Message reply = MessageUtil.createReplyMessage(request,
                                ("reply:" + body).getBytes(StandardCharsets.UTF_8));
                        var sent = replier.send(reply);
                        Harness.out.println("SERVED " + Harness.oneLine(body) + " " + sent.getSendStatus());
                    } catch (Exception e) {
                        replyErrors.incrementAndGet();
                        Harness.out.println("ERR reply " + Harness.describe(e));
                    }
                    handled.incrementAndGet();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            replier.start();
            responder.start();
            requester.start();
        } catch (Exception e) {
            Harness.out.println("ERR start " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        }
        int answered = 0;
        try {
            // Requests are timed from when the responder consumes: a push consumer may start
            // pulling only after its next heartbeat, up to 30 s (a client race, on any broker:
            // apache/rocketmq#3434).
            long probed = System.currentTimeMillis();
            requester.send(new Message(topic, PROBE.getBytes(StandardCharsets.UTF_8)));
            if (!consuming.await(READY_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                Harness.out.println("ERR responder consumed nothing in " + READY_TIMEOUT_MS + " ms");
                return Harness.EXIT_FAIL;
            }
            // A reply finds the requester by its heartbeat: a client that started before it
            // knew any broker sends its first one only on its next heartbeat tick.
            requester.getDefaultMQProducerImpl().getMqClientFactory().sendHeartbeatToAllBrokerWithLock();
            Harness.out.println("READY after=" + (System.currentTimeMillis() - probed));
            List<MessageQueue> queues = requester.fetchPublishMessageQueues(topic);
            for (int i = 0; i < count; i++) {
                String body = "req-" + i;
                Message msg = new Message(topic, body.getBytes(StandardCharsets.UTF_8));
                long started = System.currentTimeMillis();
                String queue = "-";
                Message reply = null;
                String failure = null;
                try {
                    switch (mode) {
                        case "sync":
                            reply = requester.request(msg, requestTimeoutMs);
                            break;
                        case "selector": {
                            MessageQueueSelector byIndex = (mqs, m, arg) -> mqs.get((Integer) arg % mqs.size());
                            queue = Integer.toString(queues.get(i % queues.size()).getQueueId());
                            reply = requester.request(msg, byIndex, i, requestTimeoutMs);
                            break;
                        }
                        default: {
                            CountDownLatch done = new CountDownLatch(1);
                            Message[] got = new Message[1];
                            String[] err = new String[1];
                            requester.request(msg, new RequestCallback() {
                                @Override
                                public void onSuccess(Message message) {
                                    // The 5.x client calls this once the request is sent, with
                                    // no reply yet, and again with the reply.
                                    if (message != null) {
                                        got[0] = message;
                                        done.countDown();
                                    }
                                }

                                @Override
                                public void onException(Throwable e) {
                                    err[0] = Harness.describe(e);
                                    done.countDown();
                                }
                            }, requestTimeoutMs);
                            if (!done.await(requestTimeoutMs + 5_000, TimeUnit.MILLISECONDS)) {
                                err[0] = "no callback";
                            }
                            reply = got[0];
                            failure = err[0];
                        }
                    }
                } catch (Exception e) {
                    failure = Harness.describe(e);
                }
                if (reply == null) {
                    Harness.out.println("ERR request " + i + " " + (failure == null ? "no reply" : failure));
                    continue;
                }
                String replyBody = new String(reply.getBody(), StandardCharsets.UTF_8);
                if (!replyBody.equals("reply:" + body)) {
                    Harness.out.println("ERR request " + i + " wrong reply " + Harness.oneLine(replyBody));
                    continue;
                }
                answered++;
                Harness.out.println("REPLY " + i + " queue=" + queue + " rtt=" + (System.currentTimeMillis() - started)
                        + " body=" + replyBody + " topic=" + reply.getTopic());
            }
            // The requester stays connected until every request was answered or refused (a
            // client whose request() gave up early would otherwise see its replies refused
            // for want of its channel).
            long deadline = System.currentTimeMillis() + requestTimeoutMs;
            while (handled.get() < count && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
        } catch (Exception e) {
            Harness.out.println("ERR " + Harness.describe(e));
        } finally {
            requester.shutdown();
            responder.shutdown();
            replier.shutdown();
        }
        if (answered == count && replyErrors.get() == 0) {
            Harness.out.println("OK replies=" + answered);
            return Harness.EXIT_OK;
        }
        Harness.out.println("FAIL replies=" + answered + " of " + count + " replyErrors=" + replyErrors.get());
        return Harness.EXIT_FAIL;
    }
}
