// Apache RocketMQ's own SQL92 filter as an oracle for sluice's `filter` crate: reads
// requests on stdin, one per line, and answers each on stdout. Run it with the Apache
// broker's class path (it needs rocketmq-filter), as a single source file:
//
//   java -cp "$(cat target/java-it/apache-broker/5.3.3/classpath.txt)" SqlOracle.java
//
// Request:  EXPR [TAB NAME TAB VALUE]...   (fields escaped: backslash, tab, newline, CR, u+4 hex digits)
// Answer:   P TAB MESSAGE                  the expression does not compile (getMessage())
//           E TAB RESULT TAB TOSTRING      TRUE | FALSE | NULL | X:exception-class
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import org.apache.rocketmq.filter.expression.EvaluationContext;
import org.apache.rocketmq.filter.expression.Expression;
import org.apache.rocketmq.filter.expression.MQFilterException;
import org.apache.rocketmq.filter.parser.SelectorParser;

public class SqlOracle {
    static String unescape(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != '\\' || i + 1 >= s.length()) {
                b.append(c);
                continue;
            }
            char n = s.charAt(++i);
            switch (n) {
                case 't': b.append('\t'); break;
                case 'n': b.append('\n'); break;
                case 'r': b.append('\r'); break;
                case 'u': b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16)); i += 4; break;
                default: b.append(n);
            }
        }
        return b.toString();
    }

    static String escape(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\') b.append("\\\\");
            else if (c == '\t') b.append("\\t");
            else if (c == '\n') b.append("\\n");
            else if (c == '\r') b.append("\\r");
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.toString();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            String sql = unescape(f[0]);
            Map<String, String> props = new HashMap<>();
            for (int i = 1; i + 1 < f.length; i += 2) {
                props.put(unescape(f[i]), unescape(f[i + 1]));
            }
            Expression e;
            try {
                e = SelectorParser.parse(sql);
            } catch (MQFilterException ex) {
                out.println("P\t" + escape(String.valueOf(ex.getMessage())));
                continue;
            } catch (Throwable t) {
                out.println("P\t!" + escape(t.toString()));
                continue;
            }
            String result;
            try {
                Object r = e.evaluate(new EvaluationContext() {
                    public Object get(String name) { return props.get(name); }
                    public Map<String, Object> keyValues() { return new HashMap<>(props); }
                });
                if (r == null) result = "NULL";
                else if (r instanceof Boolean) result = ((Boolean) r) ? "TRUE" : "FALSE";
                else result = "O:" + r.getClass().getName();
            } catch (Throwable t) {
                result = "X:" + t.getClass().getName();
            }
            out.println("E\t" + result + "\t" + escape(e.toString()));
        }
        out.flush();
    }
}
