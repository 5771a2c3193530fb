package io.chatintake.channel.telegram;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * One bot's send slots in PostgreSQL ({@code telegram_send_budget}): every process sending for
 * the bot takes its slots from the same row, so replicas together stay within the bot's limit
 * however many of them run, from their first send on. One short statement per send; the row's
 * lock orders the processes.
 */
final class SharedBotBudget implements BotBudget {
    // The slot taken is the row's new next_slot_at less one gap; a row whose next slot is further
    // off than the wait is left as it is, and returns nothing.
    private static final String TAKE = """
            INSERT INTO telegram_send_budget AS b (bot_name, next_slot_at) VALUES (?, clock_timestamp() + make_interval(secs => ?))
            ON CONFLICT (bot_name) DO UPDATE SET next_slot_at = greatest(b.next_slot_at, clock_timestamp()) + make_interval(secs => ?)
             WHERE b.next_slot_at <= clock_timestamp() + make_interval(secs => ?)
            RETURNING extract(epoch FROM b.next_slot_at - clock_timestamp())""";
    private static final String NEXT = "SELECT extract(epoch FROM next_slot_at - clock_timestamp()) FROM telegram_send_budget WHERE bot_name = ?";

    private final DataSource dataSource;
    private final String botName;

    SharedBotBudget(DataSource dataSource, String botName) {
        this.dataSource = dataSource;
        this.botName = botName;
    }

    @Override
    public long take(long gap, long maxWait) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            try (PreparedStatement ps = c.prepareStatement(TAKE)) {
                ps.setString(1, botName);
                ps.setDouble(2, seconds(gap));
                ps.setDouble(3, seconds(gap));
                ps.setDouble(4, seconds(maxWait));
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        return Math.max(0, nanos(rs.getDouble(1)) - gap);
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement(NEXT)) {
                ps.setString(1, botName);
                try (ResultSet rs = ps.executeQuery()) {
                    // Gone meanwhile (a purge): free now, the next take makes it again.
                    return rs.next() ? Math.max(maxWait + 1, nanos(rs.getDouble(1))) : 0;
                }
            }
        }
    }

    private static double seconds(long nanos) {
        return nanos / 1e9;
    }

    private static long nanos(double seconds) {
        return (long) (seconds * 1e9);
    }
}
