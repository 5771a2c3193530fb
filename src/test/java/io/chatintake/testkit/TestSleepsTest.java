package io.chatintake.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Tests wait on conditions, not on fixed sleeps. The rule this scan of src/test/java enforces:
 * <ul>
 * <li>a {@code Thread.sleep} or {@code TimeUnit.X.sleep} passes when its argument is a literal or a
 * constant of at most {@value #MOST_MILLIS} ms: a polling step, or the pace of load a test makes;</li>
 * <li>a method that sleeps on its own parameter (such as {@code pause(long millis)}) is a sleep
 * helper, and every call of it is held to the same bound;</li>
 * <li>any other argument fails, because the scan cannot see its bound;</li>
 * <li>load or an outage that must last a while is not a sleep when it waits on a deadline while
 * checking a condition: {@link Await#throughout}, or a loop of short sleeps up to a deadline that
 * checks something each turn. A "nothing happens" check waits for a positive marker that comes
 * after it (a later item handled, a log line) instead;</li>
 * <li>sleeps in the text of route files a test writes (strings, text blocks) are that route's.</li>
 * </ul>
 */
class TestSleepsTest {
    static final long MOST_MILLIS = 200;
    private static final Path TESTS = Path.of("src/test/java");

    private static final Pattern SLEEP = Pattern.compile(
            "\\bThread\\s*\\.\\s*sleep\\s*\\(|\\b(?:TimeUnit\\s*\\.\\s*)?(NANOSECONDS|MICROSECONDS|MILLISECONDS|SECONDS|MINUTES)\\s*\\.\\s*sleep\\s*\\(");
    private static final Pattern METHOD = Pattern.compile("\\b(\\w+)\\s*\\(([^()]*)\\)\\s*(?:throws\\s+[\\w.\\s,]+)?\\{");
    private static final Pattern NUMBER_CONSTANT = Pattern.compile("\\bfinal\\s+(?:long|int)\\s+(\\w+)\\s*=\\s*([0-9_]+)[lL]?\\s*;");
    private static final Pattern DURATION_CONSTANT = Pattern.compile(
            "\\bfinal\\s+Duration\\s+(\\w+)\\s*=\\s*Duration\\s*\\.\\s*of(Millis|Seconds|Minutes)\\s*\\(\\s*([0-9_]+)[lL]?\\s*\\)\\s*;");
    private static final Pattern LITERAL = Pattern.compile("([0-9_]+)[lL]?");
    private static final Pattern IDENTIFIER = Pattern.compile("\\w+");
    private static final Pattern MILLIS_OF = Pattern.compile("(?:Duration\\s*\\.\\s*of(Millis|Seconds|Minutes)\\s*\\(\\s*([0-9_]+)[lL]?\\s*\\)|(\\w+))\\s*\\.\\s*toMillis\\s*\\(\\s*\\)");
    private static final Pattern MIN = Pattern.compile("Math\\s*\\.\\s*min\\s*\\((.*)\\)");
    private static final Set<String> NOT_METHODS = Set.of("if", "for", "while", "switch", "catch", "synchronized", "try");

    @Test
    void noTestSleepsLongerThan200Milliseconds() {
        Map<String, List<String>> found = scan(sources());
        assertThat(found).as("sleeps over " + MOST_MILLIS + " ms, or of a length the scan cannot see; wait on a condition"
                + " (Await.until), or keep load going with Await.throughout").isEmpty();
    }

    @Test
    void theScanFindsLongSleepsHiddenSleepsAndSleepsInHelpers() {
        Map<String, String> fixtures = Map.of("a/Waits.java", """
                import java.time.Duration;
                class Waits {
                    static final long SETTLE = 4000;
                    static final Duration OUTAGE = Duration.ofSeconds(6);
                    void test(long left) throws Exception {
                        Thread.sleep(4_000L);
                        Thread.sleep(SETTLE);
                        Thread.sleep(OUTAGE.toMillis());
                        Thread.sleep(left / 1_000_000);
                        java.util.concurrent.TimeUnit.SECONDS.sleep(1);
                        pause(20_000);
                    }
                    static void pause(long millis) {
                        try { Thread.sleep(millis); } catch (InterruptedException e) { }
                    }
                }
                """, "b/Loads.java", """
                import static a.Waits.pause;
                class Loads {
                    void load() { pause(6000); Waits.pause(7000); }
                }
                """);
        assertThat(scan(fixtures)).containsOnlyKeys("a/Waits.java", "b/Loads.java")
                .hasEntrySatisfying("a/Waits.java", lines -> assertThat(lines).hasSize(6)
                        .anyMatch(line -> line.contains("4000 ms")).anyMatch(line -> line.contains("6000 ms"))
                        .anyMatch(line -> line.contains("1000 ms")).anyMatch(line -> line.contains("20000 ms"))
                        .anyMatch(line -> line.contains("left / 1_000_000")))
                .hasEntrySatisfying("b/Loads.java", lines -> assertThat(lines).hasSize(2));
    }

    @Test
    void theScanPassesShortSleepsDeadlineLoopsAndSleepsInTheTextOfRouteFiles() {
        Map<String, String> fixtures = Map.of("a/Polls.java", """
                class Polls {
                    static final long STEP = 100;
                    // Thread.sleep(5000) in a comment is no sleep
                    void test(long deadline) throws Exception {
                        while (System.nanoTime() < deadline && !done()) {
                            Thread.sleep(STEP);
                        }
                        Thread.sleep(Math.min(200, deadline - System.nanoTime()));
                        pause(20);
                        limiter.pause("7", java.time.Duration.ofSeconds(5));
                        String route = \"""
                                from("timer:x").process(e -> Thread.sleep(3000));
                                \""";
                        String call = "Thread.sleep(3000)";
                    }
                    static void pause(long millis) throws InterruptedException {
                        Thread.sleep(millis);
                    }
                }
                """, "b/Other.java", """
                class Other {
                    void test() { pause("reply"); }
                    private void pause(String kind) { }
                }
                """);
        assertThat(scan(fixtures)).isEmpty();
    }

    private static Map<String, String> sources() {
        try (Stream<Path> files = Files.walk(TESTS)) {
            Map<String, String> sources = new TreeMap<>();
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                sources.put(TESTS.relativize(file).toString().replace('\\', '/'), Files.readString(file));
            }
            assertThat(sources).as("test sources found").containsKey("io/chatintake/testkit/TestSleepsTest.java");
            return sources;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** @return by file, the sleeps that break the rule, each as "line n: what" */
    static Map<String, List<String>> scan(Map<String, String> sources) {
        Map<String, String> code = new HashMap<>();
        sources.forEach((file, text) -> code.put(file, codeOnly(text)));
        Map<String, List<String>> found = new TreeMap<>();
        List<Helper> helpers = new ArrayList<>();
        code.forEach((file, text) -> {
            Matcher sleep = SLEEP.matcher(text);
            while (sleep.find()) {
                String argument = argument(text, sleep.end());
                long unit = unitMillis(sleep.group(1));
                Optional<String> helper = parameterOfEnclosingMethod(text, sleep.start(), argument);
                if (helper.isPresent()) {
                    helpers.add(new Helper(file, helper.get(), unit));
                } else {
                    check(text, file, sleep.start(), argument, unit, found);
                }
            }
        });
        for (Helper helper : helpers) {
            String declaringClass = helper.file.substring(helper.file.lastIndexOf('/') + 1).replace(".java", "");
            code.forEach((file, text) -> {
                boolean bare = file.equals(helper.file) || Pattern.compile("import\\s+static\\s+[\\w.]*\\." + declaringClass + "\\."
                        + helper.name + "\\s*;").matcher(text).find();
                Matcher call = Pattern.compile("(?<![\\w.])(?:" + declaringClass + "\\s*\\.\\s*)?" + helper.name + "\\s*\\(").matcher(text);
                while (call.find()) {
                    boolean qualified = call.group().startsWith(declaringClass);
                    String argument = argument(text, call.end());
                    if ((bare || qualified) && !isDeclaration(text, call.end()) && !argument.contains(",")) {
                        check(text, file, call.start(), argument, helper.unitMillis, found);
                    }
                }
            });
        }
        return found;
    }

    private record Helper(String file, String name, long unitMillis) {
    }

    private static void check(String text, String file, int at, String argument, long unitMillis, Map<String, List<String>> found) {
        OptionalLong millis = millis(text, argument);
        if (millis.isEmpty()) {
            found.computeIfAbsent(file, f -> new ArrayList<>()).add("line " + line(text, at) + ": a sleep of " + argument.strip()
                    + ", a length the scan cannot see");
        } else if (millis.getAsLong() * unitMillis > MOST_MILLIS) {
            found.computeIfAbsent(file, f -> new ArrayList<>()).add("line " + line(text, at) + ": a sleep of "
                    + millis.getAsLong() * unitMillis + " ms");
        }
    }

    /** The bound of an argument in milliseconds, when a literal, a constant or the smaller of two shows it. */
    private static OptionalLong millis(String text, String argument) {
        String a = argument.strip();
        Matcher m;
        if ((m = LITERAL.matcher(a)).matches()) {
            return OptionalLong.of(Long.parseLong(m.group(1).replace("_", "")));
        }
        if ((m = MIN.matcher(a)).matches()) {
            List<String> parts = topLevel(m.group(1));
            return parts.stream().map(part -> millis(text, part)).filter(OptionalLong::isPresent)
                    .mapToLong(OptionalLong::getAsLong).min().stream().mapToObj(OptionalLong::of).findFirst().orElse(OptionalLong.empty());
        }
        if ((m = MILLIS_OF.matcher(a)).matches()) {
            if (m.group(3) == null) {
                return OptionalLong.of(Long.parseLong(m.group(2).replace("_", "")) * durationUnit(m.group(1)));
            }
            Matcher constant = DURATION_CONSTANT.matcher(text);
            while (constant.find()) {
                if (constant.group(1).equals(m.group(3))) {
                    return OptionalLong.of(Long.parseLong(constant.group(3).replace("_", "")) * durationUnit(constant.group(2)));
                }
            }
            return OptionalLong.empty();
        }
        if (IDENTIFIER.matcher(a).matches()) {
            Matcher constant = NUMBER_CONSTANT.matcher(text);
            while (constant.find()) {
                if (constant.group(1).equals(a)) {
                    return OptionalLong.of(Long.parseLong(constant.group(2).replace("_", "")));
                }
            }
        }
        return OptionalLong.empty();
    }

    private static long durationUnit(String unit) {
        return switch (unit) {
            case "Millis" -> 1;
            case "Seconds" -> 1000;
            default -> 60_000;
        };
    }

    private static long unitMillis(String timeUnit) {
        if (timeUnit == null) {
            return 1;
        }
        return switch (timeUnit) {
            case "SECONDS" -> 1000;
            case "MINUTES" -> 60_000;
            // below a millisecond still counts as one: only the bound matters
            default -> 1;
        };
    }

    /** The name of the method around {@code at} when {@code argument} is one of its parameters: a sleep helper. */
    private static Optional<String> parameterOfEnclosingMethod(String text, int at, String argument) {
        String name = argument.strip();
        if (!IDENTIFIER.matcher(name).matches()) {
            return Optional.empty();
        }
        Matcher method = METHOD.matcher(text);
        String enclosing = null;
        while (method.find() && method.start() < at) {
            if (NOT_METHODS.contains(method.group(1)) || closingBrace(text, method.end() - 1) < at) {
                continue;
            }
            boolean parameter = topLevel(method.group(2)).stream().map(String::strip)
                    .anyMatch(p -> p.endsWith(" " + name) || p.equals(name));
            enclosing = parameter ? method.group(1) : enclosing;
        }
        return Optional.ofNullable(enclosing);
    }

    private static boolean isDeclaration(String text, int afterParenthesis) {
        int close = closingParenthesis(text, afterParenthesis - 1);
        return Pattern.compile("\\s*(?:throws\\s+[\\w.\\s,]+)?\\{").matcher(text).region(close + 1, text.length()).lookingAt();
    }

    private static String argument(String text, int afterParenthesis) {
        return text.substring(afterParenthesis, closingParenthesis(text, afterParenthesis - 1));
    }

    private static int closingParenthesis(String text, int open) {
        return closing(text, open, '(', ')');
    }

    private static int closingBrace(String text, int open) {
        return closing(text, open, '{', '}');
    }

    /** Where the bracket opened at {@code open} closes (the end of the text if it never does). */
    private static int closing(String text, int open, char opening, char closing) {
        int depth = 0;
        for (int i = open; i < text.length(); i++) {
            char c = text.charAt(i);
            depth += c == opening ? 1 : c == closing ? -1 : 0;
            if (depth == 0) {
                return i;
            }
        }
        return text.length();
    }

    /** Splits at the commas outside parentheses and angle brackets. */
    private static List<String> topLevel(String list) {
        List<String> parts = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < list.length(); i++) {
            char c = list.charAt(i);
            depth += c == '(' || c == '<' ? 1 : c == ')' || c == '>' ? -1 : 0;
            if (c == ',' && depth == 0) {
                parts.add(list.substring(start, i));
                start = i + 1;
            }
        }
        parts.add(list.substring(start));
        return parts;
    }

    private static int line(String text, int at) {
        return (int) text.substring(0, at).chars().filter(c -> c == '\n').count() + 1;
    }

    /** The source with comments, strings, text blocks and characters blanked, line breaks kept. */
    static String codeOnly(String source) {
        StringBuilder out = new StringBuilder(source.length());
        int i = 0;
        while (i < source.length()) {
            int end;
            if (source.startsWith("//", i)) {
                end = source.indexOf('\n', i);
                end = end < 0 ? source.length() : end;
            } else if (source.startsWith("/*", i)) {
                end = source.indexOf("*/", i + 2);
                end = end < 0 ? source.length() : end + 2;
            } else if (source.startsWith("\"\"\"", i)) {
                end = endOfQuoted(source, i + 3, "\"\"\"");
            } else if (source.charAt(i) == '"') {
                end = endOfQuoted(source, i + 1, "\"");
            } else if (source.charAt(i) == '\'') {
                end = endOfQuoted(source, i + 1, "'");
            } else {
                out.append(source.charAt(i++));
                continue;
            }
            for (int j = i; j < end; j++) {
                out.append(source.charAt(j) == '\n' ? '\n' : ' ');
            }
            i = end;
        }
        return out.toString();
    }

    private static int endOfQuoted(String source, int from, String quote) {
        for (int i = from; i < source.length(); i++) {
            if (source.charAt(i) == '\\') {
                i++;
            } else if (source.startsWith(quote, i)) {
                return i + quote.length();
            }
        }
        return source.length();
    }
}
