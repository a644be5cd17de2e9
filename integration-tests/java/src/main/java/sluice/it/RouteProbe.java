package sluice.it;

import java.util.List;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Asks the name server where a topic's queues live, the way a producer does.
 *
 * <pre>
 * RouteProbe --namesrv 127.0.0.1:9876 --topic T [--wait-ms 0] [--timeout-ms 30000]
 * </pre>
 *
 * <p>Prints, on stdout:
 *
 * <pre>
 * BROKER &lt;cluster&gt; &lt;brokerName&gt; &lt;brokerId&gt; &lt;addr&gt;      one per broker address in the route
 * QUEUEDATA &lt;brokerName&gt; &lt;read&gt; &lt;write&gt; &lt;perm&gt; &lt;sysFlag&gt;  one per queue data in the route
 * ROUTE &lt;json&gt;                                    the TopicRouteData as the client decoded it
 * QUEUE &lt;brokerName&gt; &lt;queueId&gt;                     one per queue from fetchPublishMessageQueues
 * OK queues=&lt;n&gt;                                   exit 0
 * </pre>
 *
 * or {@code ERR route ...} / {@code ERR queues ...} and exit 1. With {@code --wait-ms} it retries
 * (every 500 ms) until the route is there or the wait is over, for a broker that is still
 * registering.
 */
public final class RouteProbe {
    private static final String USAGE =
            "--namesrv HOST:PORT --topic TOPIC [--group G] [--wait-ms MS] [--rpc-timeout-ms MS] [--timeout-ms MS]";

    private RouteProbe() {}

    public static void main(String[] argv) {
        Args args;
        try {
            args = Args.parse(argv,
                    new String[] {"namesrv", "topic", "group", "wait-ms", "rpc-timeout-ms", "timeout-ms"},
                    new String[] {});
            args.required("namesrv");
            args.required("topic");
        } catch (Args.UsageException e) {
            Harness.usage("RouteProbe", e.getMessage(), USAGE);
            return;
        }
        long waitMs = args.getLong("wait-ms", 0);
        Harness.init("RouteProbe", args.getLong("timeout-ms", 30_000 + waitMs));
        Harness.exit(run(args, waitMs));
    }

    private static int run(Args args, long waitMs) {
        String topic = args.required("topic");
        long rpcTimeoutMs = args.getLong("rpc-timeout-ms", 3_000);
        DefaultMQProducer producer = new DefaultMQProducer(args.get("group", "sluice_it_route_probe"));
        producer.setNamesrvAddr(args.required("namesrv"));
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("route-probe-" + ProcessHandle.current().pid());
        try {
            producer.start();
        } catch (Exception e) {
            Harness.out.println("ERR start " + Harness.describe(e));
            return Harness.EXIT_FAIL;
        }
        try {
            long deadline = System.currentTimeMillis() + waitMs;
            while (true) {
                String route = null;
                String routeErr = null;
                String queuesErr = null;
                List<MessageQueue> queues = null;
                try {
                    route = describeRoute(producer, topic, rpcTimeoutMs);
                } catch (Exception e) {
                    routeErr = Harness.describe(e);
                }
                try {
                    queues = producer.fetchPublishMessageQueues(topic);
                } catch (Exception e) {
                    queuesErr = Harness.describe(e);
                }
                boolean ok = routeErr == null && queuesErr == null;
                if (ok || System.currentTimeMillis() >= deadline) {
                    if (route != null) {
                        Harness.out.println(route);
                    } else {
                        Harness.out.println("ERR route " + routeErr);
                    }
                    if (queuesErr != null) {
                        Harness.out.println("ERR queues " + queuesErr);
                        return Harness.EXIT_FAIL;
                    }
                    for (MessageQueue mq : queues) {
                        Harness.out.println("QUEUE " + mq.getBrokerName() + " " + mq.getQueueId());
                    }
                    Harness.out.println("OK queues=" + queues.size());
                    return routeErr == null ? Harness.EXIT_OK : Harness.EXIT_FAIL;
                }
                Thread.sleep(500);
            }
        } catch (InterruptedException e) {
            Harness.out.println("ERR interrupted");
            return Harness.EXIT_FAIL;
        } finally {
            producer.shutdown();
        }
    }

    /**
     * Fetches the route through the producer's MQClientInstance, as the client itself does. {@code
     * var} keeps this source free of TopicRouteData's package, which moved between 4.x and 5.x.
     */
    private static String describeRoute(DefaultMQProducer producer, String topic, long rpcTimeoutMs)
            throws Exception {
        var api = producer.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
        var route = api.getTopicRouteInfoFromNameServer(topic, rpcTimeoutMs);
        StringBuilder lines = new StringBuilder();
        for (var bd : route.getBrokerDatas()) {
            for (var e : bd.getBrokerAddrs().entrySet()) {
                lines.append("BROKER ").append(bd.getCluster()).append(' ').append(bd.getBrokerName())
                        .append(' ').append(e.getKey()).append(' ').append(e.getValue()).append('\n');
            }
        }
        for (var qd : route.getQueueDatas()) {
            lines.append("QUEUEDATA ").append(qd.getBrokerName()).append(' ').append(qd.getReadQueueNums())
                    .append(' ').append(qd.getWriteQueueNums()).append(' ').append(qd.getPerm()).append(' ')
                    .append(qd.getTopicSysFlag()).append('\n');
        }
        lines.append("ROUTE ").append(Harness.oneLine(route.toJson()));
        return lines.toString();
    }
}
