package sluice.it;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * Requests signed with the official client's ACL hook ({@code AclClientRPCHook}, in
 * {@code org.apache.rocketmq.acl.common} for both 4.9.8 and 5.3.3), or not signed at all, for the
 * auth tests: sends to a topic and pulls from its queue 0 as a group, and prints what the broker
 * answered.
 *
 * <pre>
 * AuthProbe --namesrv A --topic T [--group G] [--access-key AK --secret-key SK] [--send N] [--pull]
 * SEND OK &lt;msgId&gt;           SEND FAIL &lt;code&gt; &lt;remark&gt;
 * PULL OK &lt;status&gt; &lt;count&gt;  PULL FAIL &lt;code&gt; &lt;remark&gt;
 * </pre>
 *
 * A failure's code is the broker's response code (-1 when the client failed without one).
 */
public final class AuthProbe {
    private static final String USAGE = "--namesrv HOST:PORT --topic TOPIC [--group G] [--access-key AK "
            + "--secret-key SK] [--send N] [--pull] [--timeout-ms MS]";

    private AuthProbe() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "group", "access-key", "secret-key", "send", "timeout-ms"},
                    new String[] {"pull"});
            args.required("namesrv");
            args.required("topic");
        } catch (Args.UsageException e) {
            Harness.usage("AuthProbe", e.getMessage(), USAGE);
            return;
        }
        Harness.init("AuthProbe", args.getLong("timeout-ms", 60_000));
        Harness.exit(run(args));
    }

    private static RPCHook hook(Args args) {
        String ak = args.get("access-key", null);
        if (ak == null) {
            return null;
        }
        return new AclClientRPCHook(new SessionCredentials(ak, args.get("secret-key", "")));
    }

    /** The broker's code and remark behind a client exception. */
    private static String failure(Throwable t) {
        for (Throwable cur = t; cur != null; cur = cur.getCause() == cur ? null : cur.getCause()) {
            if (cur instanceof MQBrokerException) {
                MQBrokerException b = (MQBrokerException) cur;
                return b.getResponseCode() + " " + Harness.oneLine(String.valueOf(b.getErrorMessage()));
            }
        }
        if (t instanceof MQClientException && ((MQClientException) t).getResponseCode() > 0) {
            MQClientException c = (MQClientException) t;
            return c.getResponseCode() + " " + Harness.oneLine(String.valueOf(c.getErrorMessage()));
        }
        return "-1 " + Harness.describe(t);
    }

    private static int run(Args args) {
        String namesrv = args.required("namesrv");
        String topic = args.required("topic");
        String group = args.get("group", "sluice_it_auth_probe");
        long sends = args.getLong("send", 0);
        String instance = "auth-probe-" + ProcessHandle.current().pid();
        int code = Harness.EXIT_OK;
        if (sends > 0) {
            DefaultMQProducer producer = new DefaultMQProducer(group + "_P", hook(args));
            producer.setNamesrvAddr(namesrv);
            producer.setVipChannelEnabled(false);
            producer.setInstanceName(instance);
            producer.setRetryTimesWhenSendFailed(0);
            producer.setSendMsgTimeout(5_000);
            try {
                producer.start();
                for (int i = 0; i < sends; i++) {
                    Message msg = new Message(topic, ("auth-" + i).getBytes(StandardCharsets.UTF_8));
                    try {
                        SendResult r = producer.send(msg);
                        Harness.out.println("SEND OK " + r.getMsgId());
                    } catch (Exception e) {
                        Harness.out.println("SEND FAIL " + failure(e));
                    }
                }
            } catch (Exception e) {
                Harness.out.println("ERR producer " + Harness.describe(e));
                code = Harness.EXIT_FAIL;
            } finally {
                producer.shutdown();
            }
        }
        if (args.flag("pull")) {
            @SuppressWarnings("deprecation")
            DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(group, hook(args));
            consumer.setNamesrvAddr(namesrv);
            consumer.setVipChannelEnabled(false);
            consumer.setInstanceName(instance + "-c");
            try {
                consumer.start();
                List<MessageQueue> queues = new ArrayList<>(consumer.fetchSubscribeMessageQueues(topic));
                queues.sort(Comparator.comparing(MessageQueue::getBrokerName).thenComparingInt(MessageQueue::getQueueId));
                try {
                    PullResult r = consumer.pull(queues.get(0), "*", 0, 32);
                    int n = r.getMsgFoundList() == null ? 0 : r.getMsgFoundList().size();
                    Harness.out.println("PULL OK " + r.getPullStatus() + " " + n);
                } catch (Exception e) {
                    Harness.out.println("PULL FAIL " + failure(e));
                }
            } catch (Exception e) {
                Harness.out.println("ERR consumer " + Harness.describe(e));
                code = Harness.EXIT_FAIL;
            } finally {
                consumer.shutdown();
            }
        }
        return code;
    }
}
