package io.chatintake.ops;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.store.Database;
import io.chatintake.store.Migrations;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@code messages find [--channel C] [--bot B] [--conversation ID] [--sender ID] [--text T]
 * [--event ID] [--since T] [--until T] [--limit N] [--after CURSOR]} and {@code messages show KEY}:
 * the status page's search and timeline as text. Read-only: it never migrates.
 */
public final class MessagesCommand {
    private static final Set<String> FIND_OPTIONS = Set.of("--channel", "--bot", "--conversation", "--sender", "--text", "--event",
            "--since", "--until", "--limit", "--after");
    private static final String USAGE = "messages find [--channel C] [--bot B] [--conversation ID] [--sender ID] [--text T] [--event ID]"
            + " [--since T] [--until T] [--limit N] [--after CURSOR] | messages show KEY";

    private final Settings settings;
    private final PrintStream out;

    public MessagesCommand(Settings settings, PrintStream out) {
        this.settings = settings;
        this.out = out;
    }

    public int run(List<String> args) {
        String sub = args.isEmpty() ? "" : args.get(0);
        if (!sub.equals("find") && !sub.equals("show")) {
            throw new ConfigurationException("usage: " + USAGE);
        }
        MessageSearch.Filter filter = sub.equals("find") ? filter(args.subList(1, args.size())) : null;
        MessageSearch.Key key = sub.equals("show") ? key(args) : null;
        try (Database database = Database.openForCommand(settings)) {
            Migrations.requireCurrent(database.dataSource());
            try (Connection c = database.dataSource().getConnection()) {
                c.setReadOnly(true);
                return filter != null ? find(c, filter) : show(c, key);
            }
        } catch (SQLException e) {
            throw new ConfigurationException("cannot read the stored messages: " + e.getMessage(), e);
        }
    }

    private int find(Connection c, MessageSearch.Filter filter) throws SQLException {
        MessageSearch.Page page;
        try {
            page = MessageSearch.find(c, filter);
        } catch (IllegalArgumentException e) {
            throw new ConfigurationException(e.getMessage());
        }
        for (MessageSearch.Found f : page.rows()) {
            out.printf("%s  %s  %s/%s  conversation %s  sender %s  event %s  %s  %s%n", f.key(), f.receivedAt(), f.channel(), f.source(),
                    dash(f.conversation()), dash(f.sender()), dash(f.event()), dash(f.type()), f.text() == null ? "" : quoted(f.text()));
        }
        out.printf("%d message(s)%s%n", page.rows().size(), page.next() == null ? "" : "; older ones: --after " + page.next());
        return 0;
    }

    private int show(Connection c, MessageSearch.Key key) throws SQLException {
        Optional<MessageTimeline.Timeline> found = MessageTimeline.of(c, key);
        if (found.isEmpty()) {
            out.println("no stored message " + key + " (removed by retention, or never stored)");
            return 1;
        }
        MessageTimeline.Timeline t = found.get();
        MessageSearch.Found m = t.message();
        out.printf("message %s: %s/%s, conversation %s, sender %s, event %s, type %s%n", m.key(), m.channel(), m.source(),
                dash(m.conversation()), dash(m.sender()), dash(m.event()), dash(m.type()));
        out.printf("received %s, stored by %s; %d deliver%s, the last %s%n", m.receivedAt(), dash(t.storedBy()), t.deliveries(),
                t.deliveries() == 1 ? "y" : "ies", t.lastReceivedAt());
        if (m.text() != null) {
            out.println("text: " + quoted(m.text()));
        }
        if (t.album() == null) {
            out.println("album: none");
        } else {
            out.printf("album %s (album id %s), decided version %d%s%n", t.album().albumKey(), t.album().albumId(), t.album().decidedVersion(),
                    t.album().needsPerson() ? ", needs a person" : "");
            t.decisions().forEach(d -> out.printf("  decision v%d %s, %d child(ren), completed by %s at %s%n", d.version(), d.kind(),
                    d.children(), d.completedBy(), d.decidedAt()));
        }
        out.println("work:" + (t.items().isEmpty() ? " none" : ""));
        for (MessageTimeline.Item i : t.items()) {
            out.printf("  item %d %s: %s after %d attempt(s), created %s%n", i.id(), i.kind(), i.state(), i.attempts(), i.createdAt());
            t.runs().stream().filter(r -> r.itemId() == i.id()).forEach(r -> out.printf("    attempt %d: %s%s, by %s, %s%s%n",
                    r.attempt(), r.state(), r.line() == null ? "" : " (" + r.line() + ")", dash(r.process()), r.finishedAt(),
                    r.duration() == null ? "" : ", " + r.duration().toMillis() + " ms since claimed"));
        }
        out.println("effects and replies:" + (t.effects().isEmpty() ? " none" : ""));
        t.effects().forEach(e -> out.printf("  %s (item %d): %s, started %s%s%s%n", e.key(), e.itemId(), e.state(), e.startedAt(),
                e.doneAt() == null ? "" : ", done " + e.doneAt(), e.result() == null ? "" : ", result " + quoted(e.result())));
        out.println("payload (secret fields masked):");
        out.println(t.payload());
        return 0;
    }

    private static MessageSearch.Filter filter(List<String> args) {
        for (int i = 0; i < args.size(); i += 2) {
            if (!FIND_OPTIONS.contains(args.get(i)) || i + 1 >= args.size()) {
                throw new ConfigurationException("messages find: '" + args.get(i) + "' " + (FIND_OPTIONS.contains(args.get(i))
                        ? "needs a value" : "is not an option") + "; usage: " + USAGE);
            }
        }
        Instant now = Instant.now();
        try {
            int limit = option(args, "--limit").map(Integer::parseInt).orElse(50);
            return new MessageSearch.Filter(option(args, "--channel").orElse(null), option(args, "--bot").orElse(null),
                    option(args, "--conversation").orElse(null), option(args, "--sender").orElse(null), option(args, "--text").orElse(null),
                    option(args, "--event").orElse(null), MessageSearch.time(option(args, "--since").orElse(null), now),
                    MessageSearch.time(option(args, "--until").orElse(null), now), limit, option(args, "--after").orElse(null));
        } catch (IllegalArgumentException e) {
            throw new ConfigurationException("messages find: " + e.getMessage());
        }
    }

    private static MessageSearch.Key key(List<String> args) {
        if (args.size() != 2) {
            throw new ConfigurationException("messages show needs KEY (as messages find prints it, e.g. telegram-12 or webhook-7)");
        }
        return MessageSearch.Key.parse(args.get(1)).orElseThrow(() -> new ConfigurationException(
                "messages show: '" + args.get(1) + "' is not a message key (telegram-N or webhook-N, as messages find prints it)"));
    }

    private static Optional<String> option(List<String> args, String name) {
        int at = args.indexOf(name);
        return at >= 0 && at + 1 < args.size() ? Optional.of(args.get(at + 1)) : Optional.empty();
    }

    private static String dash(String value) {
        return value == null ? "-" : value;
    }

    private static String quoted(String text) {
        String one = text.replace("\n", " ").replace("\r", " ");
        return "\"" + (one.length() > 120 ? one.substring(0, 120) + "..." : one) + "\"";
    }
}
