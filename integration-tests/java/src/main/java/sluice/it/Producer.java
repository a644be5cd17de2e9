package sluice.it;

import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * Sends N messages synchronously, one at a time.
 *
 * <pre>
 * Producer --namesrv 127.0.0.1:9876 --topic T --count 10 [--group G] [--tag TAG]
 *          [--keys-prefix K] [--body-prefix B] [--send-timeout-ms 3000] [--retries 2]
 *          [--keep-going] [--timeout-ms MS]
 * </pre>
 *
 * <p>Message i (from 0) has body {@code <body-prefix>-<i>}, key {@code <keys-prefix>-<i>} (when a
 * prefix is given) and the tag (when given). Prints, on stdout:
 *
 * <pre>
 * SENT &lt;msgId&gt; &lt;offsetMsgId&gt; &lt;queueId&gt; &lt;queueOffset&gt; &lt;sendStatus&gt;   one per message, in order
 * OK sent=&lt;n&gt;                                                    exit 0
 * </pre>
 *
 * A failed send prints {@code ERR send <i> <exception>} and stops (exit 1), or with {@code
 * --keep-going} goes on and ends with {@code ERR sent=<ok> failed=<n>} (exit 1). A status other
 * than SEND_OK is printed as is and does not count as a failure.
 */
public final class Producer {
    private static final String USAGE = "--namesrv HOST:PORT --topic TOPIC --count N [--group G] [--tag TAG]"
            + " [--keys-prefix K] [--body-prefix B] [--send-timeout-ms MS] [--retries N] [--keep-going]"
            + " [--timeout-ms MS]";

    private Producer() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "count", "group", "tag", "keys-prefix", "body-prefix",
                        "send-timeout-ms", "retries", "timeout-ms"},
                    new String[] {"keep-going"});
            args.required("namesrv");
            args.required("topic");
            args.required("count");
        } catch (Args.UsageException e) {
            Harness.usage("Producer", e.getMessage(), USAGE);
            return;
        }
        int count = args.getInt("count", 0);
        long sendTimeoutMs = args.getLong("send-timeout-ms", 3_000);
        Harness.init("Producer", args.getLong("timeout-ms", 30_000 + count * sendTimeoutMs));
        Harness.exit(run(args, count, sendTimeoutMs));
    }

    private static int run(Args args, int count, long sendTimeoutMs) {
        String topic = args.required("topic");
        String tag = args.get("tag", null);
        String keysPrefix = args.get("keys-prefix", null);
        String bodyPrefix = args.get("body-prefix", "msg");
        boolean keepGoing = args.flag("keep-going");

        DefaultMQProducer producer = new DefaultMQProducer(args.get("group", "sluice_it_producer"));
        producer.setNamesrvAddr(args.required("namesrv"));
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("producer-" + ProcessHandle.current().pid());
        producer.setSendMsgTimeout((int) sendTimeoutMs);
        producer.setRetryTimesWhenSendFailed(args.getInt("retries", 2));
        try {
            producer.start();
        } catch (Exception e) {
            Harness.out.println("ERR start " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        }
        int failed = 0;
        try {
            for (int i = 0; i < count; i++) {
                byte[] body = (bodyPrefix + "-" + i).getBytes(StandardCharsets.UTF_8);
                Message msg = new Message(topic, body);
                if (tag != null) {
                    msg.setTags(tag);
                }
                if (keysPrefix != null) {
                    msg.setKeys(keysPrefix + "-" + i);
                }
                try {
                    SendResult r = producer.send(msg, sendTimeoutMs);
                    Harness.out.println("SENT " + r.getMsgId() + " " + r.getOffsetMsgId() + " "
                            + r.getMessageQueue().getQueueId() + " " + r.getQueueOffset() + " " + r.getSendStatus());
                } catch (Exception e) {
                    Harness.out.println("ERR send " + i + " " + Harness.describe(e));
                    failed++;
                    if (!keepGoing) {
                        return Harness.EXIT_FAIL;
                    }
                }
            }
        } finally {
            producer.shutdown();
        }
        if (failed > 0) {
            Harness.out.println("ERR sent=" + (count - failed) + " failed=" + failed);
            return Harness.EXIT_FAIL;
        }
        Harness.out.println("OK sent=" + count);
        return Harness.EXIT_OK;
    }
}
