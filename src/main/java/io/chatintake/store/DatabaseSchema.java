package io.chatintake.store;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL schema chat-intake keeps its tables in ({@code chat-intake.db.schema},
 * {@code chat_intake} by default), so that it can share a database with other applications'
 * tables in {@code public}. Every pooled connection has it as its only {@code search_path} entry
 * (pgjdbc's {@code currentSchema}), so no SQL statement names a schema, and the migrations create
 * it and put their tables there ({@link Migrations}).
 */
public final class DatabaseSchema {
    private static final Logger LOG = LoggerFactory.getLogger(DatabaseSchema.class);

    public static final String SETTING = "chat-intake.db.schema";
    public static final String DEFAULT = "chat_intake";
    /** Plain lower-case identifiers only: they need no quoting in search_path nor in Flyway. */
    private static final Pattern NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    private static final String PUBLIC = "public";

    private DatabaseSchema() {
    }

    public static String configured(Settings settings) {
        String schema = settings.value(SETTING);
        if (!NAME.matcher(schema).matches()) {
            throw new ConfigurationException(Settings.envName(SETTING) + " (" + SETTING
                    + ") must be a lower-case PostgreSQL identifier (letters, digits, _), got '" + schema + "'");
        }
        return schema;
    }

    /**
     * The schema to use on this database: the configured one, except for an install from before
     * this setting existed, whose tables are in {@code public}. Those stay where they are (moving
     * them is the operator's decision, see README), with a warning, so no data is left behind.
     */
    static String resolve(Connection connection, String configured) throws SQLException {
        if (configured.equals(PUBLIC) || hasHistory(connection, configured) || !hasChatIntakeHistory(connection, PUBLIC)) {
            return configured;
        }
        LOG.warn("database: chat-intake's tables are in schema public (installed before {} existed); using them there."
                        + " Set {}=public to keep them there without this warning, or move them to schema {} (README: Database schema)",
                SETTING, Settings.envName(SETTING), configured);
        return PUBLIC;
    }

    /** The schema a data source's connections create and find tables in: the first entry of their search_path. */
    static String of(Connection connection) throws SQLException {
        try (Statement s = connection.createStatement(); ResultSet rs = s.executeQuery("SHOW search_path")) {
            rs.next();
            for (String entry : rs.getString(1).split(",")) {
                String name = entry.trim().replace("\"", "");
                if (!name.isEmpty() && !name.equals("$user")) {
                    return name;
                }
            }
            return PUBLIC;
        }
    }

    private static boolean hasHistory(Connection connection, String schema) throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement("SELECT to_regclass(? || '.flyway_schema_history') IS NOT NULL")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** A Flyway history that ran chat-intake's first migration, not another application's. */
    private static boolean hasChatIntakeHistory(Connection connection, String schema) throws SQLException {
        if (!hasHistory(connection, schema)) {
            return false;
        }
        try (Statement s = connection.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM " + schema + ".flyway_schema_history WHERE script = 'V1__runner.sql'")) {
            rs.next();
            return rs.getLong(1) > 0;
        }
    }
}
