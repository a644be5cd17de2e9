package sluice.it;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Minimal "--key value" / "--flag" command line parser shared by the test programs.
 *
 * <p>Unknown options are rejected so a typo in a Rust test fails loudly instead of silently
 * running with a default.
 */
final class Args {
    private final Map<String, String> values = new HashMap<>();
    private final Set<String> flags = new HashSet<>();

    private Args() {}

    /**
     * @param argv the raw arguments
     * @param valueOpts option names (without "--") that take a value
     * @param flagOpts option names (without "--") that take no value
     */
    static Args parse(String[] argv, String[] valueOpts, String[] flagOpts) {
        Set<String> valueSet = Set.of(valueOpts);
        Set<String> flagSet = Set.of(flagOpts);
        Args args = new Args();
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--")) {
                throw new UsageException("unexpected argument: " + a);
            }
            String name = a.substring(2);
            if (flagSet.contains(name)) {
                args.flags.add(name);
            } else if (valueSet.contains(name)) {
                if (i + 1 >= argv.length) {
                    throw new UsageException("missing value for --" + name);
                }
                args.values.put(name, argv[++i]);
            } else {
                throw new UsageException("unknown option: " + a);
            }
        }
        return args;
    }

    String required(String name) {
        String v = values.get(name);
        if (v == null) {
            throw new UsageException("missing required option --" + name);
        }
        return v;
    }

    String get(String name, String def) {
        return values.getOrDefault(name, def);
    }

    int getInt(String name, int def) {
        String v = values.get(name);
        if (v == null) {
            return def;
        }
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " wants an integer, got " + v);
        }
    }

    long getLong(String name, long def) {
        String v = values.get(name);
        if (v == null) {
            return def;
        }
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " wants an integer, got " + v);
        }
    }

    boolean flag(String name) {
        return flags.contains(name);
    }

    static final class UsageException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }
}
