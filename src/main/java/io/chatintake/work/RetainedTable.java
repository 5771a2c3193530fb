package io.chatintake.work;

import io.chatintake.support.Contributions;
import java.util.List;

/**
 * A table that a channel keeps and {@link Retention} purges: the channel knows its tables, the
 * engine knows how to purge them without leaving work behind. A table is either the source of a
 * kind of work ({@link #workSource}: a row goes with its work item once both are finished and
 * old) or plain rows that outlive their work ({@link #plain}, purged by row address after the
 * engine's own tables).
 *
 * @param table      the table's name
 * @param key        the column a batch is claimed and deleted by
 * @param ageColumn  the time a row's age is counted from ({@code now()} minus the table's days)
 * @param settingKey its {@code retention.*-days} key
 * @param workKind   the kind whose {@code source_id} is the row's id, or null for plain rows
 * @param before     common table expressions run with each batch before its rows go (reading
 *                   {@code doomed}, the batch's keys as {@code k}), each ending in ", "; or null
 * @param pending    the condition (on {@code x}, the row) of a row that is itself work not done yet (a
 *                   stored event not derived yet), which no age purges; or null
 */
public record RetainedTable(String table, String key, String ageColumn, String settingKey, String workKind, String before,
                            String pending) {

    /** What a channel registers (in {@code META-INF/services}) so that retention purges its tables. */
    public interface Contributor {
        List<RetainedTable> retainedTables();
    }

    public static RetainedTable workSource(String table, String ageColumn, String settingKey, String workKind) {
        return new RetainedTable(table, "id", ageColumn, settingKey, workKind, null, null);
    }

    /** Rows without a unique column, claimed and deleted by their row address. */
    public static RetainedTable plain(String table, String ageColumn, String settingKey) {
        return new RetainedTable(table, "ctid", ageColumn, settingKey, null, null, null);
    }

    public RetainedTable before(String commonTableExpressions) {
        return new RetainedTable(table, key, ageColumn, settingKey, workKind, commonTableExpressions, pending);
    }

    public RetainedTable pending(String condition) {
        return new RetainedTable(table, key, ageColumn, settingKey, workKind, before, condition);
    }

    /** The tables the channels on the class path contribute, in the order they are registered. */
    public static List<RetainedTable> registered() {
        return Contributions.of(Contributor.class, Contributor::retainedTables);
    }
}
