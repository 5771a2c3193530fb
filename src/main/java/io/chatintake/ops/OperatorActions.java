package io.chatintake.ops;

import static io.chatintake.store.Transactions.inTransaction;

import io.chatintake.album.AlbumDecisions;
import io.chatintake.store.OperatorPause;
import io.chatintake.work.EffectGuard;
import io.chatintake.work.WorkQueue;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * What an operator fixes by hand, the same calls for the CLI ({@code work retry},
 * {@code work resolve-effect}, {@code albums resolve}, {@code telegram|work pause|resume}) and the
 * status page's buttons. Each answers with one sentence saying what changed, or that nothing did;
 * the page also keeps that sentence in {@code operator_action} with who and when ({@link #record}).
 * A pause or a resume records itself, from the CLI too, in the transaction that makes it.
 */
final class OperatorActions {
    private final DataSource dataSource;
    private final WorkQueue queue;

    OperatorActions(DataSource dataSource) {
        this.dataSource = dataSource;
        this.queue = new WorkQueue(dataSource);
    }

    /** Whether anything changed, and the sentence that says what. */
    record Outcome(boolean changed, String sentence) {
    }

    /** One parked (or failed) item back to pending, due now. */
    Outcome retry(long id) throws SQLException {
        return queue.retry(id) == 1 ? new Outcome(true, "work item " + id + " back to pending")
                : new Outcome(false, "work item " + id + " is not parked or failed (unknown, or retried already); nothing changed");
    }

    /** Every parked item of one kind back to pending, one by one, as {@code work retry --id} would. */
    Outcome retryParked(String kind) throws SQLException {
        List<Long> ids = new ArrayList<>();
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT id FROM work_item WHERE state = 'parked' AND kind = ? ORDER BY id")) {
            ps.setString(1, kind);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                }
            }
        }
        int back = 0;
        for (long id : ids) {
            back += queue.retry(id);
        }
        return new Outcome(back > 0, back + " parked item(s) of kind " + kind + " back to pending");
    }

    /**
     * A person looked at the other side: the effect happened (recorded done) or did not (recorded
     * failed). Either way its item goes back to pending: the guard then skips a performed effect
     * and performs one that was not.
     */
    Outcome settleEffect(String key, boolean performed, String by) throws SQLException {
        Optional<EffectGuard.Resolved> resolved = new EffectGuard(dataSource).resolve(key, performed, by);
        if (resolved.isEmpty()) {
            return new Outcome(false, "effect " + key + " is not awaiting reconciliation (unknown, or settled already); nothing changed");
        }
        Long itemId = resolved.get().workItemId();
        boolean back = itemId != null && queue.retry(itemId) == 1;
        return new Outcome(true, "effect " + key + " recorded " + (performed ? "performed (done)" : "not performed (failed)")
                + " by " + by + "; " + (back ? "work item " + itemId + " back to pending: "
                + (performed ? "the guard skips the effect" : "the effect runs again") : "no parked work item to put back"));
    }

    /** A person settled an album's conflicting totals. */
    Outcome resolveAlbum(String albumKey, String by) throws SQLException {
        return new AlbumDecisions(dataSource).resolve(albumKey, by)
                ? new Outcome(true, "album " + albumKey + " resolved by " + by + ": needs_person cleared")
                : new Outcome(false, "album " + albumKey + " is not awaiting a person (unknown, or resolved already); nothing changed");
    }

    /** Pauses a bot's polling or a kind of work ({@link OperatorPause}); every process obeys within about 2 s. */
    Outcome pause(OperatorPause.Subject subject, String name, String by) throws SQLException {
        return inTransaction(dataSource, c -> {
            OperatorPause.Change change = OperatorPause.pause(c, subject, name, by);
            String what = subject.label + " " + name;
            Outcome outcome = change.changed()
                    ? new Outcome(true, what + " paused by " + by + " (" + standing(c, subject, name) + "): " + subject.meaning(name))
                    : new Outcome(false, what + " is paused already (" + since(change.pause()) + "); nothing changed");
            record(c, by, "pause-" + subject.word, what, outcome.sentence());
            return outcome;
        });
    }

    /** Ends a pause: the bot polls again from its offset, the kind's items are claimed again, in order per chat. */
    Outcome resume(OperatorPause.Subject subject, String name, String by) throws SQLException {
        return inTransaction(dataSource, c -> {
            Optional<OperatorPause.Paused> ended = OperatorPause.resume(c, subject, name);
            String what = subject.label + " " + name;
            Outcome outcome = ended.isPresent()
                    ? new Outcome(true, what + " resumed by " + by + " (" + since(ended.get()) + "; " + standing(c, subject, name) + ")")
                    : new Outcome(false, what + " is not paused; nothing changed");
            record(c, by, "resume-" + subject.word, what, outcome.sentence());
            return outcome;
        });
    }

    private static String since(OperatorPause.Paused pause) {
        return "paused by " + pause.by() + " since " + pause.since().truncatedTo(ChronoUnit.SECONDS);
    }

    /** Where the paused thing stands: a bot's next offset (untouched by a pause), a kind's unfinished items. */
    private static String standing(Connection c, OperatorPause.Subject subject, String name) throws SQLException {
        boolean bot = subject == OperatorPause.Subject.TELEGRAM_BOT;
        try (PreparedStatement ps = c.prepareStatement(bot ? "SELECT next_offset FROM telegram_checkpoint WHERE bot_name = ?"
                : "SELECT count(*) FROM work_item WHERE kind = ? AND state <> 'done'")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                if (!bot) {
                    rs.next();
                    return rs.getLong(1) + " unfinished item(s)";
                }
                return rs.next() ? "next offset " + rs.getLong(1) : "it has not polled this database yet";
            }
        }
    }

    /** Keeps what was done from the page: by whom, to what, and the sentence it answered. */
    void record(String by, String action, String target, String outcome) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            record(c, by, action, target, outcome);
        }
    }

    private static void record(Connection c, String by, String action, String target, String outcome) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO operator_action (acted_by, action, target, outcome) VALUES (?, ?, ?, ?)")) {
            ps.setString(1, by);
            ps.setString(2, action);
            ps.setString(3, target);
            ps.setString(4, outcome);
            ps.executeUpdate();
        }
    }

    /** The name a CLI action is recorded under: {@code --by NAME}, else the OS user's. */
    static String by(List<String> args) {
        int i = args.indexOf("--by");
        return i >= 0 && i + 1 < args.size() ? args.get(i + 1) : System.getProperty("user.name", "unknown");
    }
}
