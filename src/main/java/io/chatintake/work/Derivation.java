package io.chatintake.work;

import java.sql.SQLException;

/**
 * Rows intake committed as they came (the stored row is the durable job) and that still have to
 * become what they imply: child messages, their listeners' rows, work items. The staged work
 * scheduler ({@link StagedWorkScheduler}) derives them right after intake says so and looks by
 * itself for rows a process left underived when it died. Any number of processes may derive at
 * once; each row is derived exactly once, and a chat's work items get their ids in the order the
 * rows were derived. The channels implement it and bind it in Camel's registry.
 */
public interface Derivation {
    /**
     * Derives up to {@code limit} underived rows, oldest first, in one transaction.
     * @return the rows derived; {@code limit} means more may be waiting
     */
    int deriveNext(int limit) throws SQLException;

    /** Whether any row waits: a look that takes no lock, before a deriving transaction. */
    boolean anyUnderived() throws SQLException;
}
