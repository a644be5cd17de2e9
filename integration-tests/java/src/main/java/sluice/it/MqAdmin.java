package sluice.it;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * The official mqadmin ({@code MQAdminStartup.main0}, unchanged), with two things fixed for tests.
 *
 * <ul>
 *   <li>Exit status: {@code MQAdminStartup} catches every failure of a sub command, prints the stack
 *       trace to stderr and returns normally, so the JVM exits 0 whatever happened. This wrapper
 *       watches stderr and exits 1 when a line there starts with a Java exception or error class
 *       name (as a printed stack trace does), or when the sub command does not exist.
 *   <li>Exit time: after a command the JVM lingers for about 3 s on non-daemon Netty threads that
 *       are still shutting down. This wrapper exits as soon as {@code main0} returns (and, through
 *       {@link Harness#init}, cuts short 5.x's 3 s wait inside the command's own client shutdown).
 * </ul>
 *
 * <p>Arguments are exactly mqadmin's: {@code MqAdmin clusterList -n 127.0.0.1:9876}. The hard
 * timeout is {@code -Dsluice.it.timeoutMs} (default 60000); on expiry it prints {@code ERR timeout}
 * and exits 124. Output of the sub command is passed through untouched, stdout and stderr alike.
 */
public final class MqAdmin {
    private MqAdmin() {}

    public static void main(String[] argv) {
        Harness.init("MqAdmin", Long.getLong("sluice.it.timeoutMs", 60_000L));
        LineWatcher err = new LineWatcher(System.err);
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        LineWatcher out = new LineWatcher(System.out);
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        int code = Harness.EXIT_OK;
        try {
            MQAdminStartup.main0(argv, null);
        } catch (Throwable t) {
            t.printStackTrace();
            code = Harness.EXIT_FAIL;
        }
        System.out.flush();
        System.err.flush();
        if (err.sawThrowable || out.sawNoSuchCommand) {
            code = Harness.EXIT_FAIL;
        }
        Harness.exit(code);
    }

    /** Passes bytes through and looks at each complete line. */
    private static final class LineWatcher extends OutputStream {
        private final OutputStream sink;
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();
        volatile boolean sawThrowable;
        volatile boolean sawNoSuchCommand;

        LineWatcher(OutputStream sink) {
            this.sink = sink;
        }

        @Override
        public synchronized void write(int b) throws java.io.IOException {
            sink.write(b);
            if (b == '\n') {
                inspect(line.toString(StandardCharsets.UTF_8));
                line.reset();
            } else if (line.size() < 4096) {
                line.write(b);
            }
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) throws java.io.IOException {
            for (int i = off; i < off + len; i++) {
                write(b[i]);
            }
        }

        @Override
        public synchronized void flush() throws java.io.IOException {
            sink.flush();
        }

        private void inspect(String s) {
            // "org.apache.rocketmq.tools.command.SubCommandException: TopicRouteSubCommand command failed"
            // "Exception in thread ..." ; but not the "\tat ..." / "Caused by: ..." lines that follow.
            String first = s.split("[:\\s]", 2)[0];
            if (s.startsWith("Exception in thread")
                    || (first.indexOf('.') > 0 && (first.endsWith("Exception") || first.endsWith("Error")))) {
                sawThrowable = true;
            }
            // MQAdminStartup: "The sub command %s not exist."
            if (s.startsWith("The sub command ") && s.trim().endsWith("not exist.")) {
                sawNoSuchCommand = true;
            }
        }
    }
}
