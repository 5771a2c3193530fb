package io.chatintake.album;

import java.util.Map;

/**
 * The headers of the album kinds' work: a child on its way to the aggregator ({@code album-child})
 * and a recorded decision ({@code album-decision}). Every one starts with {@code ChatIntakeAlbum};
 * each is also set under its former name ({@link #FORMER_NAMES}) for routes that read it.
 */
public final class AlbumConstants {
    /** The scoped album key, the aggregator's correlation. */
    public static final String KEY = "ChatIntakeAlbumKey";
    public static final String CHILD_ID = "ChatIntakeAlbumChildId";
    public static final String INDEX = "ChatIntakeAlbumIndex";
    public static final String TOTAL = "ChatIntakeAlbumTotal";
    /** The channel that stored the child (Telegram albums have their own quiet period). */
    public static final String PROVIDER = "ChatIntakeAlbumProvider";
    /** Whether the album's children stored when this child was loaded agree on a total they reach. */
    public static final String COMPLETE = "ChatIntakeAlbumComplete";
    /** The album's children stored when this child was loaded, this one among them. */
    public static final String STORED_CHILDREN = "ChatIntakeAlbumStoredChildren";
    /** Whether the album was an open group when this child was loaded (not decided, no completion of it in flight). */
    public static final String GROUP_OPEN = "ChatIntakeAlbumGroupOpen";
    /** The quiet period the album's deadline was set with (deadline - last child), in milliseconds. */
    public static final String STORED_QUIET_MILLIS = "ChatIntakeAlbumStoredQuietMillis";
    /** A decision's kind: complete, provisional, conflict or late. */
    public static final String DECISION_KIND = "ChatIntakeAlbumDecisionKind";
    public static final String DECISION_VERSION = "ChatIntakeAlbumDecisionVersion";
    /** How many children a decision includes. */
    public static final String CHILD_COUNT = "ChatIntakeAlbumChildCount";

    /** Each header's name before the one-prefix rename, still set beside it for routes that read it. */
    public static final Map<String, String> FORMER_NAMES = Map.ofEntries(
            Map.entry(KEY, "AlbumKey"),
            Map.entry(CHILD_ID, "AlbumChildId"),
            Map.entry(INDEX, "AlbumIndex"),
            Map.entry(TOTAL, "AlbumTotal"),
            Map.entry(PROVIDER, "AlbumProvider"),
            Map.entry(COMPLETE, "AlbumComplete"),
            Map.entry(STORED_CHILDREN, "AlbumStoredChildren"),
            Map.entry(GROUP_OPEN, "AlbumGroupOpen"),
            Map.entry(STORED_QUIET_MILLIS, "AlbumStoredQuietMillis"),
            Map.entry(DECISION_KIND, "AlbumDecisionKind"),
            Map.entry(DECISION_VERSION, "AlbumDecisionVersion"),
            Map.entry(CHILD_COUNT, "AlbumChildCount"));

    private AlbumConstants() {
    }
}
