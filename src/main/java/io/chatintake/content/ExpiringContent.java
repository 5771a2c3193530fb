package io.chatintake.content;

import io.chatintake.support.Contributions;
import java.util.List;

/**
 * A channel's table whose content expires ({@link ContentExpiry}) or is erased
 * ({@link ContentRemoval}) while the row stays: the channel knows its columns, this layer how to
 * remove them without touching content that unfinished work still reads.
 *
 * @param table     the table's name; its key is {@code id}
 * @param ageColumn the time a row's age is counted from
 * @param workKind  the kind whose items read the row; null when the row is the source of kinds
 *                  not known here (any kind that no other table names)
 * @param clear     the assignments that remove the content ({@code payload = NULL, ...})
 * @param held      the condition of a row that still holds content
 * @param waiting   the condition of a row whose work is still to be made from it (derived or
 *                  scheduled after intake's commit): that work reads its content, so it does not
 *                  expire until then; erasure removes it all the same. Null when the row shows no such
 *                  state
 */
public record ExpiringContent(String table, String ageColumn, String workKind, String clear, String held, String waiting) {

    /** What a channel registers (in {@code META-INF/services}) so that its content expires and can be erased. */
    public interface Contributor {
        List<ExpiringContent> expiringContent();
    }

    /** The tables the channels on the class path contribute, in the order they are registered. */
    public static List<ExpiringContent> registered() {
        return Contributions.of(Contributor.class, Contributor::expiringContent);
    }
}
