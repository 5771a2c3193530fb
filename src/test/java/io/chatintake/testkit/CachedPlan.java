package io.chatintake.testkit;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * What a statement costs when PostgreSQL runs it from a plan it cached while the tables were
 * small, as a pooled connection does after a quiet start followed by a burst (nothing analyzes
 * the tables in between): the tables are fresh temporary copies (same constraints and indexes,
 * same names) that autovacuum never analyzes, the statement is prepared with a generic plan and
 * run once on a few rows, the tables grow, and it runs once more under
 * {@code EXPLAIN (ANALYZE, BUFFERS)}. Its buffer count shows whether that plan walks the grown table.
 */
public final class CachedPlan {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** @param blocks shared buffers the last run touched; {@code plan} is the plan as JSON, for messages */
    public record Explained(long blocks, String plan) {
    }

    private CachedPlan() {
    }

    /**
     * @param tables  the tables the statement names, copied empty (with their indexes) for this session
     * @param seed    SQL that puts the few rows in
     * @param sql     the statement, with {@code ?} parameters
     * @param types   the parameters' types, in order
     * @param firstArgs the arguments of the run that caches the plan, as SQL expressions
     * @param grow    SQL that makes the tables big
     * @param lastArgs the arguments of the run that is measured
     */
    public static Explained afterGrowth(Connection c, List<String> tables, String seed, String sql, List<String> types,
                                        String firstArgs, String grow, String lastArgs) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("RESET search_path");
            String schema = currentSchema(s);
            try {
                s.execute("SET search_path = pg_temp, " + schema);
                for (String table : tables) {
                    copyEmpty(s, schema, table);
                }
                s.execute(seed);
                s.execute("SET plan_cache_mode = force_generic_plan");
                s.execute("PREPARE cached_plan (" + String.join(", ", types) + ") AS " + numbered(sql));
                s.execute("EXECUTE cached_plan (" + firstArgs + ")");
                s.execute(grow);
                try (ResultSet rs = s.executeQuery("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE cached_plan (" + lastArgs + ")")) {
                    rs.next();
                    String plan = rs.getString(1);
                    JsonNode top = JSON.readTree(plan).get(0).get("Plan");
                    return new Explained(top.get("Shared Hit Blocks").asLong() + top.get("Shared Read Blocks").asLong()
                            + top.get("Local Hit Blocks").asLong() + top.get("Local Read Blocks").asLong(), plan);
                }
            } catch (JsonProcessingException e) {
                throw new IllegalStateException(e);
            } finally {
                // The connection goes back to the pool as it came.
                try (ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_prepared_statements WHERE name = 'cached_plan'")) {
                    rs.next();
                    if (rs.getInt(1) > 0) {
                        s.execute("DEALLOCATE cached_plan");
                    }
                }
                s.execute("RESET plan_cache_mode");
                s.execute("DROP TABLE IF EXISTS " + String.join(", ", tables.stream().map(t -> "pg_temp." + t).toList()));
                s.execute("RESET search_path");
            }
        }
    }

    /** The table's columns, constraints and indexes, under their own names (statements name constraints). */
    private static void copyEmpty(Statement s, String schema, String table) throws SQLException {
        s.execute("CREATE TEMPORARY TABLE " + table + " (LIKE " + schema + "." + table + " INCLUDING DEFAULTS INCLUDING GENERATED)");
        List<String> ddl = new ArrayList<>();
        String relation = "'" + schema + "." + table + "'::regclass";
        try (ResultSet rs = s.executeQuery("SELECT 'ALTER TABLE pg_temp." + table + " ADD CONSTRAINT ' || quote_ident(conname) || ' '"
                + " || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = " + relation + " AND contype IN ('p', 'u', 'c', 'x')")) {
            while (rs.next()) {
                ddl.add(rs.getString(1));
            }
        }
        try (ResultSet rs = s.executeQuery("SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = " + relation
                + " AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)")) {
            while (rs.next()) {
                ddl.add(rs.getString(1).replace(" ON " + schema + "." + table + " ", " ON pg_temp." + table + " "));
            }
        }
        for (String statement : ddl) {
            s.execute(statement);
        }
    }

    private static String currentSchema(Statement s) throws SQLException {
        try (ResultSet rs = s.executeQuery("SELECT current_schema()")) {
            rs.next();
            return rs.getString(1);
        }
    }

    /** JDBC's {@code ?} as PREPARE's {@code $1, $2, ...}. */
    private static String numbered(String sql) {
        StringBuilder out = new StringBuilder();
        int n = 0;
        for (char ch : sql.toCharArray()) {
            if (ch == '?') {
                out.append('$').append(++n);
            } else {
                out.append(ch);
            }
        }
        return out.toString();
    }
}
