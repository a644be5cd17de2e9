package sluice.it;

import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * The POP programs' shared pieces (5.x only, like every {@code Pop*} class: see pom.xml).
 *
 * <p>As an {@link RPCHook} on a client it counts the requests the client sent and the answers it
 * got, by (request code, response code), with the topics the requests named: what the 5.3.3
 * client really does on the wire in POP mode (QUERY_ASSIGNMENT, POP_MESSAGE, ACK_MESSAGE,
 * CHANGE_MESSAGE_INVISIBLETIME, and whether it still pulls). {@link #print} writes
 * {@code RPC req=<code> resp=<code> n=<count> topics=<t1,t2|-> queues=<q1,q2|->} lines, one per
 * (request code, response code) answered: the topics and queue ids the requests' headers named
 * (a POP_MESSAGE of queue -1 pops every queue of the broker).
 */
final class PopRpcLog implements RPCHook {
    private final Map<String, long[]> counts = new TreeMap<>();
    private final Map<String, TreeSet<String>> topics = new TreeMap<>();
    private final Map<String, TreeSet<Integer>> queues = new TreeMap<>();

    @Override
    public void doBeforeRequest(String remoteAddr, RemotingCommand request) {}

    @Override
    public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
        if (response == null) {
            return;
        }
        String key = request.getCode() + " " + response.getCode();
        Object topic = headerField(request, "getTopic");
        Object queue = headerField(request, "getQueueId");
        synchronized (this) {
            counts.computeIfAbsent(key, k -> new long[1])[0]++;
            TreeSet<String> t = topics.computeIfAbsent(key, k -> new TreeSet<>());
            if (topic != null) {
                t.add(topic.toString());
            }
            TreeSet<Integer> q = queues.computeIfAbsent(key, k -> new TreeSet<>());
            if (queue instanceof Integer) {
                q.add((Integer) queue);
            }
        }
    }

    /** A getter of the request's header, by reflection (the headers share no interface for it). */
    private static Object headerField(RemotingCommand request, String getter) {
        CommandCustomHeader header = request.readCustomHeader();
        if (header == null) {
            return null;
        }
        try {
            return header.getClass().getMethod(getter).invoke(header);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null; // no such field in this header
        }
    }

    synchronized void print() {
        for (Map.Entry<String, long[]> e : counts.entrySet()) {
            String[] k = e.getKey().split(" ");
            TreeSet<String> t = topics.get(e.getKey());
            TreeSet<Integer> q = queues.get(e.getKey());
            Harness.out.println("RPC req=" + k[0] + " resp=" + k[1] + " n=" + e.getValue()[0] + " topics="
                    + (t.isEmpty() ? "-" : String.join(",", t)) + " queues="
                    + (q.isEmpty() ? "-" : q.stream().map(String::valueOf).collect(Collectors.joining(","))));
        }
    }

    /** A POP receipt handle (the POP_CK property: space-separated fields) as one word: ',' for ' '. */
    static String ck(MessageExt m) {
        String ck = m.getProperty(MessageConst.PROPERTY_POP_CK);
        return ck == null ? "-" : ck.replace(' ', ',');
    }

    /** The message index of a body {@code <prefix>-<i>}; -1 for another body. */
    static int index(MessageExt m) {
        String body = new String(m.getBody(), java.nio.charset.StandardCharsets.UTF_8);
        int dash = body.lastIndexOf('-');
        try {
            return Integer.parseInt(body.substring(dash + 1));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static String orDash(String s) {
        return s == null ? "-" : s;
    }
}
