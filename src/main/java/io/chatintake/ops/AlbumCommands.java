package io.chatintake.ops;

import io.chatintake.album.AlbumMetrics;
import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.chatintake.store.Database;
import io.chatintake.store.Migrations;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * {@code albums status}: open albums, the oldest open one, recent decisions, conflicts awaiting a
 * person; {@code albums resolve ALBUM_KEY [--by NAME]}: a person settled a conflict.
 */
public final class AlbumCommands {
    private final Settings settings;
    private final PrintStream out;

    public AlbumCommands(Settings settings, PrintStream out) {
        this.settings = settings;
        this.out = out;
    }

    public int status() {
        try (Database database = Database.openForCommand(settings); Connection c = openCurrent(database)) {
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*), extract(epoch FROM now() - min(first_child_at))::bigint"
                    + " FROM album WHERE " + AlbumMetrics.OPEN); ResultSet rs = ps.executeQuery()) {
                rs.next();
                out.printf("open albums: %d%s%n", rs.getLong(1), rs.getLong(1) == 0 ? "" : " (oldest open for " + rs.getLong(2) + " s)");
            }
            out.println("recent decisions:");
            try (PreparedStatement ps = c.prepareStatement("SELECT decided_at, album_key, version, kind, jsonb_array_length(child_ids)"
                    + " FROM album_decision ORDER BY decided_at DESC, id DESC LIMIT 20"); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.printf("  %s %s v%d %s, %d child(ren)%n", rs.getTimestamp(1).toInstant(), rs.getString(2), rs.getInt(3),
                            rs.getString(4), rs.getInt(5));
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT album_key, decided_version FROM album WHERE needs_person ORDER BY album_key");
                 ResultSet rs = ps.executeQuery()) {
                StringBuilder lines = new StringBuilder();
                int count = 0;
                while (rs.next()) {
                    count++;
                    lines.append(String.format("  %s (decision v%d)%n", rs.getString(1), rs.getInt(2)));
                }
                out.printf("conflicts awaiting a person (albums resolve ALBUM_KEY when settled): %d%n%s", count, lines);
            }
            return 0;
        } catch (SQLException e) {
            throw new ConfigurationException("cannot read the album tables: " + e.getMessage(), e);
        }
    }

    public int resolve(String albumKey, String by) {
        try (Database database = Database.openForCommand(settings)) {
            Migrations.apply(database.forMigrations());
            OperatorActions.ActionResult resolved = new OperatorActions(database.dataSource()).resolveAlbum(albumKey, by);
            out.println(resolved.sentence());
            return resolved.changed() ? 0 : 1;
        } catch (SQLException e) {
            throw new ConfigurationException("cannot update the album tables: " + e.getMessage(), e);
        }
    }

    private static Connection openCurrent(Database database) throws SQLException {
        Migrations.requireCurrent(database.dataSource());
        return database.dataSource().getConnection();
    }
}
