package io.chatintake.ops;

import static io.chatintake.store.Transactions.inTransaction;

import io.chatintake.album.AlbumDecisions;
import io.chatintake.content.ContentRemoval;
import io.chatintake.store.OperatorPause;
import io.chatintake.store.Transactions;
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
 * status page's buttons. Each answers with one sentence saying what changed, or that nothing did,
 * and keeps that sentence in {@code operator_action} with who and when, from the CLI too, in the
 * transaction that makes the change: if the row cannot be written, nothing changed.
 */
final class OperatorActions {
    private final DataSource dataSource;

    OperatorActions(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /** Whether anything changed, and the sentence that says what. */
    record ActionResult(boolean changed, String sentence) {
    }

    /** The one line a retry of an item whose content is gone answers. */
    static String contentGone(long id) {
        return "work item " + id + ": refused, its content is gone (expired by retention.content-days, or erased); nothing to replay";
    }

    /** One parked (or failed) item back to pending, due now; refused when its content is gone. */
    ActionResult retry(long id, String by) throws SQLException {
        return recorded(by, "retry", "work item " + id, c -> {
            if (ContentRemoval.goneFor(c, id)) {
                return new ActionResult(false, contentGone(id));
            }
            return WorkQueue.retry(c, id) == 1
                    ? new ActionResult(true, "work item " + id + " back to pending")
                    : new ActionResult(false, "work item " + id + " is not parked or failed (unknown, or retried already); nothing changed");
        });
    }

    /** Every parked item, of every kind, back to pending ({@code work retry --all-parked}). */
    ActionResult retryAllParked(String by) throws SQLException {
        return recorded(by, "retry-all", "every parked item", c -> {
            Retried retried = retryEach(c, "SELECT id FROM work_item WHERE state = 'parked' ORDER BY id");
            return new ActionResult(retried.back() > 0, retried.back() + " item(s) back to pending" + retried.refusals());
        });
    }

    /** Every parked item of one kind back to pending, each as {@code work retry --id} would. */
    ActionResult retryParked(String kind, String by) throws SQLException {
        return recorded(by, "retry-kind", "parked " + kind, c -> {
            Retried retried = retryEach(c, "SELECT id FROM work_item WHERE state = 'parked' AND kind = ? ORDER BY id", kind);
            return new ActionResult(retried.back() > 0, retried.back() + " parked item(s) of kind " + kind + " back to pending" + retried.refusals());
        });
    }

    /** How many items went back, and how many were refused because their content is gone. */
    private record Retried(int back, int contentGone) {
        String refusals() {
            return contentGone == 0 ? "" : "; " + contentGone + " refused, their content is gone (expired or erased)";
        }
    }

    private static Retried retryEach(Connection c, String sql, String... parameters) throws SQLException {
        List<Long> ids = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < parameters.length; i++) {
                ps.setString(i + 1, parameters[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getLong(1));
                }
            }
        }
        int back = 0;
        int gone = 0;
        for (long id : ids) {
            if (ContentRemoval.goneFor(c, id)) {
                gone++;
            } else {
                back += WorkQueue.retry(c, id);
            }
        }
        return new Retried(back, gone);
    }

    /**
     * A person looked at the other side: the effect happened (recorded done) or did not (recorded
     * failed). Either way its item goes back to pending: the guard then skips a performed effect
     * and performs one that was not.
     */
    ActionResult settleEffect(String key, boolean performed, String by) throws SQLException {
        return recorded(by, "settle-effect", "effect " + key, c -> {
            Optional<EffectGuard.Resolved> resolved = EffectGuard.resolve(c, key, performed, by);
            if (resolved.isEmpty()) {
                return new ActionResult(false, "effect " + key + " is not awaiting reconciliation (unknown, or settled already); nothing changed");
            }
            Long itemId = resolved.get().workItemId();
            boolean back = itemId != null && WorkQueue.retry(c, itemId) == 1;
            return new ActionResult(true, "effect " + key + " recorded " + (performed ? "performed (done)" : "not performed (failed)")
                    + " by " + by + "; " + (back ? "work item " + itemId + " back to pending: "
                    + (performed ? "the guard skips the effect" : "the effect runs again") : "no parked work item to put back"));
        });
    }

    /** A person settled an album's conflicting totals. */
    ActionResult resolveAlbum(String albumKey, String by) throws SQLException {
        return recorded(by, "resolve-album", "album " + albumKey, c -> AlbumDecisions.resolve(c, albumKey, by)
                ? new ActionResult(true, "album " + albumKey + " resolved by " + by + ": needs_person cleared")
                : new ActionResult(false, "album " + albumKey + " is not awaiting a person (unknown, or resolved already); nothing changed"));
    }

    /**
     * The action and its {@code operator_action} row in one transaction: an action that cannot be
     * recorded is not done (the exception says so), and one recorded was done.
     */
    private ActionResult recorded(String by, String action, String target, Transactions.Work<ActionResult> work) throws SQLException {
        return inTransaction(dataSource, c -> {
            ActionResult outcome = work.run(c);
            record(c, by, action, target, outcome.sentence());
            return outcome;
        });
    }

    /** Pauses a bot's polling or a kind of work ({@link OperatorPause}); every process obeys within about 2 s. */
    ActionResult pause(OperatorPause.Subject subject, String name, String by) throws SQLException {
        return inTransaction(dataSource, c -> {
            OperatorPause.Change change = OperatorPause.pause(c, subject, name, by);
            String what = subject.label + " " + name;
            ActionResult outcome = change.changed()
                    ? new ActionResult(true, what + " paused by " + by + " (" + standing(c, subject, name) + "): " + subject.meaning(name))
                    : new ActionResult(false, what + " is paused already (" + since(change.pause()) + "); nothing changed");
            record(c, by, "pause-" + subject.word, what, outcome.sentence());
            return outcome;
        });
    }

    /** Ends a pause: the bot polls again from its offset, the kind's items are claimed again, in order per chat. */
    ActionResult resume(OperatorPause.Subject subject, String name, String by) throws SQLException {
        return inTransaction(dataSource, c -> {
            Optional<OperatorPause.Paused> ended = OperatorPause.resume(c, subject, name);
            String what = subject.label + " " + name;
            ActionResult outcome = ended.isPresent()
                    ? new ActionResult(true, what + " resumed by " + by + " (" + since(ended.get()) + "; " + standing(c, subject, name) + ")")
                    : new ActionResult(false, what + " is not paused; nothing changed");
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

    /** Keeps what was done: by whom, to what, and the sentence it answered. */
    static void record(Connection c, String by, String action, String target, String outcome) throws SQLException {
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
