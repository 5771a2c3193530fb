package io.chatintake.ops;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The status page's graphs, read from {@code status_rollup} ({@link StatusHistory}) and drawn as
 * inline SVG: one bar per minute of the last hour and one per hour of the last 7 days, for each
 * series of each bot, channel and work kind, the last value and the scale written beside it; four
 * of them summed for the overview. No script, no outside file: the page works where nothing else
 * can be reached.
 */
final class StatusGraphs {
    /** One time axis: how many buckets of what size, ending with the current one. */
    enum Range {
        MINUTES("minute", ChronoUnit.MINUTES, 60, 4, "last hour, per minute", DateTimeFormatter.ofPattern("HH:mm")),
        HOURS("hour", ChronoUnit.HOURS, 168, 2, "last 7 days, per hour", DateTimeFormatter.ofPattern("MM-dd HH:00"));

        final String resolution;
        final ChronoUnit unit;
        final int buckets;
        final int barWidth;
        final String title;
        final DateTimeFormatter label;

        Range(String resolution, ChronoUnit unit, int buckets, int barWidth, String title, DateTimeFormatter label) {
            this.resolution = resolution;
            this.unit = unit;
            this.buckets = buckets;
            this.barWidth = barWidth;
            this.title = title;
            this.label = label.withZone(ZoneOffset.UTC);
        }

        Instant first(Instant now) {
            return now.truncatedTo(unit).minus(Duration.of(buckets - 1L, unit));
        }
    }

    private static final int HEIGHT = 36;
    private static final int LABEL_WIDTH = 90;

    private static final String READ = """
            SELECT series, subject, bucket, value FROM status_rollup WHERE resolution = ? AND bucket >= ? ORDER BY subject, series""";

    /** The series each kind of subject has: bots store and send, channels store, work kinds are worked. */
    static List<String> seriesOf(String subject) {
        if (subject.startsWith("bot ")) {
            return List.of(StatusHistory.STORED, StatusHistory.SENT, StatusHistory.RATE_LIMITED);
        }
        if (subject.startsWith("work ")) {
            return List.of(StatusHistory.DONE, StatusHistory.FAILED, StatusHistory.PARKED, StatusHistory.DEFERRED,
                    StatusHistory.BACKLOG, StatusHistory.OLDEST_DUE);
        }
        return List.of(StatusHistory.STORED);
    }

    /** The overview's four lines, each summed (the oldest waiting: the largest) over what it covers. */
    private enum Overview {
        STORED("stored, all channels", "stored"),
        HANDLED("handled", "handled"),
        FAILED_AND_PARKED("failed and parked", "failed-and-parked"),
        OLDEST_WAITING("oldest waiting (s)", "oldest-waiting");

        final String title;
        final String id;

        Overview(String title, String id) {
            this.title = title;
            this.id = id;
        }

        /** Whether one subject's series adds to this line. */
        boolean covers(String subject, String series) {
            boolean work = subject.startsWith("work ");
            return switch (this) {
                case STORED -> !work && series.equals(StatusHistory.STORED);
                case HANDLED -> work && series.equals(StatusHistory.DONE);
                case FAILED_AND_PARKED -> work && (series.equals(StatusHistory.FAILED) || series.equals(StatusHistory.PARKED));
                case OLDEST_WAITING -> work && series.equals(StatusHistory.OLDEST_DUE);
            };
        }

        double[] of(Map<String, Map<String, double[]>> bySubject, Range range) {
            double[] line = new double[range.buckets];
            bySubject.forEach((subject, series) -> series.forEach((name, values) -> {
                if (covers(subject, name)) {
                    for (int i = 0; i < line.length; i++) {
                        line[i] = this == OLDEST_WAITING ? Math.max(line[i], values[i]) : line[i] + values[i];
                    }
                }
            }));
            return line;
        }
    }

    private final Instant now;
    private final Map<String, Map<String, double[]>> minutes;
    private final Map<String, Map<String, double[]>> hours;

    private StatusGraphs(Instant now, Map<String, Map<String, double[]>> minutes, Map<String, Map<String, double[]>> hours) {
        this.now = now;
        this.minutes = minutes;
        this.hours = hours;
    }

    static StatusGraphs read(Connection c, Instant now) throws SQLException {
        return new StatusGraphs(now, read(c, Range.MINUTES, now), read(c, Range.HOURS, now));
    }

    /** The four graphs of the overview: what came in, what was handled, what went wrong, how long the oldest waits. */
    void overview(Html html) {
        html.raw("<table id=\"overview-graphs\"><thead><tr><th></th><th>").text(Range.MINUTES.title).raw("</th><th>")
                .text(Range.HOURS.title).raw("</th></tr></thead><tbody>");
        for (Overview line : Overview.values()) {
            html.raw("<tr><td>").text(line.title).raw("</td><td>");
            svg(html, Range.MINUTES, "overview", line.id, line.title, line.of(minutes, Range.MINUTES));
            html.raw("</td><td>");
            svg(html, Range.HOURS, "overview", line.id, line.title, line.of(hours, Range.HOURS));
            html.raw("</td></tr>");
        }
        html.endTable();
    }

    /** The section of every graph, as {@link #all} draws it. */
    static void render(Connection c, Html html, Instant now) throws SQLException {
        read(c, now).all(html);
    }

    /**
     * Every series of every subject; those that stayed at zero in both windows fold into one line,
     * so the graphs that show something are not lost among the flat ones.
     */
    void all(Html html) {
        html.section("graphs", "Over time (all processes)");
        if (hours.isEmpty() && minutes.isEmpty()) {
            html.raw("<p>").text("Nothing counted in the last 7 days yet: each process adds its counts every "
                    + StatusHistory.SAMPLE_EVERY.toSeconds() + " s.").raw("</p>");
            return;
        }
        Set<String> subjects = new TreeSet<>(minutes.keySet());
        subjects.addAll(hours.keySet());
        List<String> flat = new ArrayList<>();
        boolean table = false;
        for (String subject : subjects) {
            for (String series : seriesOf(subject)) {
                double[] lastHour = values(minutes, subject, series, Range.MINUTES);
                double[] lastWeek = values(hours, subject, series, Range.HOURS);
                if (zero(lastHour) && zero(lastWeek)) {
                    flat.add(subject + " " + series);
                    continue;
                }
                if (!table) {
                    html.header("bot / channel / work", "series", Range.MINUTES.title, Range.HOURS.title);
                    table = true;
                }
                html.raw("<tr><td>").text(subject).raw("</td><td>").text(series).raw("</td><td>");
                svg(html, Range.MINUTES, subject, series, subject + ", " + series, lastHour);
                html.raw("</td><td>");
                svg(html, Range.HOURS, subject, series, subject + ", " + series, lastWeek);
                html.raw("</td></tr>");
            }
        }
        if (table) {
            html.endTable();
        }
        if (!flat.isEmpty()) {
            html.raw("<p id=\"graphs-flat\" class=\"meta\">").text("flat at zero over the last 7 days: " + String.join(", ", flat))
                    .raw("</p>");
        }
    }

    private static boolean zero(double[] values) {
        for (double v : values) {
            if (v != 0) {
                return false;
            }
        }
        return true;
    }

    private static double[] values(Map<String, Map<String, double[]>> bySubject, String subject, String series, Range range) {
        return bySubject.getOrDefault(subject, Map.of()).getOrDefault(series, new double[range.buckets]);
    }

    /** By subject, then series: one value per bucket, oldest first; a bucket nobody wrote is zero. */
    private static Map<String, Map<String, double[]>> read(Connection c, Range range, Instant now) throws SQLException {
        Instant first = range.first(now);
        Map<String, Map<String, double[]>> values = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement(READ)) {
            ps.setString(1, range.resolution);
            ps.setTimestamp(2, Timestamp.from(first));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    int index = (int) range.unit.between(first, rs.getTimestamp(3).toInstant());
                    if (index >= 0 && index < range.buckets) {
                        values.computeIfAbsent(rs.getString(2), s -> new TreeMap<>())
                                .computeIfAbsent(rs.getString(1), s -> new double[range.buckets])[index] = rs.getDouble(4);
                    }
                }
            }
        }
        return values;
    }

    /**
     * Bars scaled to the largest value (written at the top left), the last bucket's value at the
     * right; each bar's tooltip gives its time and value. {@code data-values} carries the figures
     * for tools that read the page.
     */
    private void svg(Html html, Range range, String subject, String series, String title, double[] values) {
        double max = 0;
        StringBuilder data = new StringBuilder();
        for (double v : values) {
            max = Math.max(max, v);
            data.append(data.isEmpty() ? "" : ",").append(figure(v));
        }
        int width = range.buckets * range.barWidth;
        String id = "graph-" + range.resolution + "-" + subject.replace(' ', '-').replace('/', '-') + "-" + series.replaceAll("[^a-z0-9]+", "-");
        html.raw("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"").text(id).raw("\" width=\"" + (width + LABEL_WIDTH) + "\" height=\""
                        + (HEIGHT + 14) + "\" role=\"img\" data-from=\"").text(range.first(now).toString())
                .raw("\" data-values=\"" + data + "\"><title>").text(title + ", " + range.title).raw("</title>")
                .raw("<rect x=\"0\" y=\"12\" width=\"" + width + "\" height=\"" + HEIGHT + "\" fill=\"#f6f6f6\"/>")
                .raw("<text x=\"2\" y=\"10\" font-size=\"10\" fill=\"#666\">").text("max " + figure(max)).raw("</text>");
        Instant first = range.first(now);
        for (int i = 0; i < values.length; i++) {
            if (values[i] <= 0) {
                continue;
            }
            int h = Math.max(1, (int) Math.round(values[i] / max * HEIGHT));
            html.raw("<rect x=\"" + i * range.barWidth + "\" y=\"" + (12 + HEIGHT - h) + "\" width=\"" + Math.max(1, range.barWidth - 1)
                            + "\" height=\"" + h + "\" fill=\"#3a7bd5\"><title>")
                    .text(range.label.format(first.plus(Duration.of(i, range.unit))) + " UTC: " + figure(values[i])).raw("</title></rect>");
        }
        html.raw("<text x=\"" + (width + 4) + "\" y=\"" + (12 + HEIGHT) + "\" font-size=\"12\">").text("now " + figure(values[values.length - 1]))
                .raw("</text></svg>");
    }

    private static String figure(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : String.format("%.1f", v);
    }
}
