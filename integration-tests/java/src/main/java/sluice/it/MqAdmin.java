package sluice.it;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
 *
 * <p>Batch mode, many commands in one JVM (a JVM start costs more than most commands):
 * {@code MqAdmin --batch FILE [PER_COMMAND_TIMEOUT_MS]}, one command per line of FILE with its
 * arguments separated by tabs. Each command's output is framed, on stdout and on stderr alike, by
 * {@code @@@ BEGIN <i>} and {@code @@@ END <i> <status>} lines, status being 0, 1 (as above) or
 * 124 (not done within the per-command timeout, default 30000 ms: the batch goes on). Exits 0.
 */
public final class MqAdmin {
    private MqAdmin() {}

    public static void main(String[] argv) {
        Harness.init("MqAdmin", Long.getLong("sluice.it.timeoutMs", 60_000L));
        LineWatcher err = new LineWatcher(System.err);
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        LineWatcher out = new LineWatcher(System.out);
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        if (argv.length >= 2 && argv[0].equals("--batch")) {
            long perCommandMs = argv.length > 2 ? Long.parseLong(argv[2]) : 30_000L;
            Harness.exit(batch(Path.of(argv[1]), perCommandMs, out, err));
            return;
        }
        Harness.exit(runOne(argv, out, err));
    }

    /** One command; its exit status. */
    private static int runOne(String[] argv, LineWatcher out, LineWatcher err) {
        out.reset();
        err.reset();
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
        return code;
    }

    private static int batch(Path file, long perCommandMs, LineWatcher out, LineWatcher err) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
            Harness.out.println("ERR cannot read " + file + ": " + e);
            return Harness.EXIT_USAGE;
        }
        forbidExitDuringCommands();
        ExecutorService runner = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "mqadmin-batch");
            t.setDaemon(true);
            return t;
        });
        for (int i = 0; i < lines.size(); i++) {
            String[] argv = lines.get(i).isEmpty() ? new String[0] : lines.get(i).split("\t", -1);
            System.out.println("@@@ BEGIN " + i);
            System.err.println("@@@ BEGIN " + i);
            Future<Integer> done = runner.submit(() -> runOne(argv, out, err));
            int code;
            try {
                code = done.get(perCommandMs, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                done.cancel(true);
                code = Harness.EXIT_TIMEOUT;
            } catch (Exception e) {
                e.printStackTrace();
                code = Harness.EXIT_FAIL;
            }
            System.out.flush();
            System.err.flush();
            System.out.println("@@@ END " + i + " " + code);
            System.err.println("@@@ END " + i + " " + code);
        }
        return Harness.EXIT_OK;
    }

    /**
     * mqadmin calls {@code System.exit(1)} on a command line it cannot parse; in a batch that
     * would end every later command too, so it fails that one command instead (a
     * SecurityException, printed as a stack trace). Only the batch's own threads are held back.
     */
    @SuppressWarnings({"removal", "deprecation"})
    private static void forbidExitDuringCommands() {
        System.setSecurityManager(new SecurityManager() {
            @Override
            public void checkPermission(java.security.Permission perm) {}

            @Override
            public void checkPermission(java.security.Permission perm, Object context) {}

            @Override
            public void checkExit(int status) {
                if (Thread.currentThread().getName().equals("mqadmin-batch")) {
                    throw new SecurityException("mqadmin called System.exit(" + status + ")");
                }
            }
        });
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

        synchronized void reset() {
            sawThrowable = false;
            sawNoSuchCommand = false;
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
