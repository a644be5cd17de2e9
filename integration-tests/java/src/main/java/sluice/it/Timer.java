package sluice.it;

import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * 5.x timer messages on both sides of a test: the producers' {@code --timer} option, and the
 * {@code TIMER} line the consumers print for a delivered timer message.
 *
 * <p>{@code --timer} names the client setter and its argument, {@code --timer-step N} adds
 * {@code i * N} (in the kind's unit) for message i:
 *
 * <pre>
 * delay-sec=S       setDelayTimeSec(S)        due = now + S s
 * delay-ms=MS       setDelayTimeMs(MS)        due = now + MS
 * deliver-ms=EPOCH  setDeliverTimeMs(EPOCH)   due = EPOCH
 * deliver-in=MS     setDeliverTimeMs(now+MS)  due = now + MS
 * </pre>
 *
 * "now" is the client's clock just before the send. The message carries its due time and its
 * send time as user properties {@link #DUE} and {@link #SENT} (epoch ms), so the consumer can
 * tell how late (or early) it arrived without any state shared with the producer. The setters are
 * found by reflection: the 4.9 client has none of them (the programs are built against both).
 */
final class Timer {
    /** User property: when the client wants the message delivered, epoch ms. */
    static final String DUE = "sluiceDue";
    /** User property: when the client sent it, epoch ms. */
    static final String SENT = "sluiceSent";

    /** The properties a broker's timer sets or keeps, printed by name in the TIMER line. */
    private static final String[][] PRINTED = {
        {"out", "TIMER_OUT_MS"},
        {"enqueue", "TIMER_ENQUEUE_MS"},
        {"dequeue", "TIMER_DEQUEUE_MS"},
        {"roll", "TIMER_ROLL_TIMES"},
        {"delaySec", "TIMER_DELAY_SEC"},
        {"delayMs", "TIMER_DELAY_MS"},
        {"deliverMs", "TIMER_DELIVER_MS"},
        {"realTopic", "REAL_TOPIC"},
        {"realQid", "REAL_QID"},
    };

    private final String setter;
    private final long base;
    private final long step;
    /** 1000 for delay-sec, else 1. */
    private final long unitMs;
    private final boolean relative;
    private final boolean now;

    private Timer(String setter, long base, long step, long unitMs, boolean relative, boolean now) {
        this.setter = setter;
        this.base = base;
        this.step = step;
        this.unitMs = unitMs;
        this.relative = relative;
        this.now = now;
    }

    /** Parses {@code --timer SPEC} with {@code --timer-step STEP}; null spec: no timer. */
    static Timer parse(String spec, long step) {
        if (spec == null) {
            return null;
        }
        String[] kv = spec.split("=", 2);
        if (kv.length != 2) {
            throw new IllegalArgumentException("--timer wants KIND=VALUE, got " + spec);
        }
        long value;
        try {
            value = Long.parseLong(kv[1]);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--timer " + spec + ": not a number");
        }
        switch (kv[0]) {
            case "delay-sec": return new Timer("setDelayTimeSec", value, step, 1_000, true, false);
            case "delay-ms": return new Timer("setDelayTimeMs", value, step, 1, true, false);
            case "deliver-ms": return new Timer("setDeliverTimeMs", value, step, 1, false, false);
            case "deliver-in": return new Timer("setDeliverTimeMs", value, step, 1, false, true);
            default: throw new IllegalArgumentException("--timer wants delay-sec, delay-ms, deliver-ms or deliver-in, got "
                    + spec);
        }
    }

    /**
     * Makes message i a timer message and records its due time; {@code extraMs} is added to the
     * due time of a relative timer (a transaction committed that much after the send: RocketMQ
     * counts a delay from the commit).
     */
    void apply(Message msg, int i, long extraMs) throws ReflectiveOperationException {
        long sentMs = System.currentTimeMillis();
        long arg = base + (long) i * step;
        long dueMs;
        if (relative) {
            dueMs = sentMs + extraMs + arg * unitMs;
        } else if (now) {
            arg += sentMs;
            dueMs = arg;
        } else {
            dueMs = arg;
        }
        msg.getClass().getMethod(setter, long.class).invoke(msg, arg);
        msg.putUserProperty(DUE, Long.toString(dueMs));
        msg.putUserProperty(SENT, Long.toString(sentMs));
    }

    /**
     * The TIMER line of a delivered message that carries {@link #DUE} or any timer property,
     * else null:
     *
     * <pre>
     * TIMER &lt;msgId&gt; recv=&lt;ms&gt; due=&lt;ms|-&gt; sent=&lt;ms|-&gt; born=&lt;ms&gt; store=&lt;ms&gt; reconsume=&lt;n&gt;
     *       out= enqueue= dequeue= roll= delaySec= delayMs= deliverMs= realTopic= realQid= names=&lt;a,b,...&gt;
     * </pre>
     *
     * {@code recv} is the consumer's clock when the message was handed to it; the named fields
     * are the properties TIMER_OUT_MS, TIMER_ENQUEUE_MS, ... ({@code -} when absent); {@code
     * names} lists every property of the message, sorted.
     */
    static String line(MessageExt m, long recvMs) {
        Map<String, String> props = m.getProperties();
        boolean timer = props.containsKey(DUE);
        for (String name : props.keySet()) {
            timer |= name.startsWith("TIMER_");
        }
        if (!timer) {
            return null;
        }
        StringBuilder sb = new StringBuilder("TIMER ").append(m.getMsgId())
                .append(" recv=").append(recvMs)
                .append(" due=").append(orDash(props.get(DUE)))
                .append(" sent=").append(orDash(props.get(SENT)))
                .append(" born=").append(m.getBornTimestamp())
                .append(" store=").append(m.getStoreTimestamp())
                .append(" reconsume=").append(m.getReconsumeTimes());
        for (String[] field : PRINTED) {
            sb.append(' ').append(field[0]).append('=').append(orDash(props.get(field[1])));
        }
        sb.append(" names=").append(String.join(",", new TreeMap<>(props).keySet()));
        return sb.toString();
    }

    private static String orDash(String s) {
        return s == null || s.isEmpty() ? "-" : s.replace(' ', '_');
    }
}
