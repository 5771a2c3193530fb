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
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The status page's graphs, read from {@code status_rollup} ({@link StatusHistory}) and drawn as
 * inline SVG: one bar per minute of the last hour and one per hour of the last 7 days, for each
 * series of each bot, channel and work kind, the last value and the scale written beside it. No
 * script, no outside file: the page works where nothing else can be reached.
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

    private StatusGraphs() {
    }

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

    static void render(Connection c, StatusReport.Html html, Instant now) throws SQLException {
        Map<String, Map<String, double[]>> minutes = read(c, Range.MINUTES, now);
        Map<String, Map<String, double[]>> hours = read(c, Range.HOURS, now);
        html.section("graphs", "Over time (all processes)");
        if (hours.isEmpty() && minutes.isEmpty()) {
            html.raw("<p>").text("Nothing counted in the last 7 days yet: each process adds its counts every "
                    + StatusHistory.SAMPLE_EVERY.toSeconds() + " s.").raw("</p>");
            return;
        }
        Set<String> subjects = new TreeSet<>(minutes.keySet());
        subjects.addAll(hours.keySet());
        html.header("bot / channel / work", "series", Range.MINUTES.title, Range.HOURS.title);
        for (String subject : subjects) {
            for (String series : seriesOf(subject)) {
                html.raw("<tr><td>").text(subject).raw("</td><td>").text(series).raw("</td><td>");
                svg(html, Range.MINUTES, now, subject, series, values(minutes, subject, series, Range.MINUTES));
                html.raw("</td><td>");
                svg(html, Range.HOURS, now, subject, series, values(hours, subject, series, Range.HOURS));
                html.raw("</td></tr>");
            }
        }
        html.endTable();
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
    private static void svg(StatusReport.Html html, Range range, Instant now, String subject, String series, double[] values) {
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
                .raw("\" data-values=\"" + data + "\"><title>").text(subject + ", " + series + ", " + range.title).raw("</title>")
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
