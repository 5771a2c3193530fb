package io.chatintake.testkit;

import io.chatintake.config.Secret;
import io.chatintake.store.DatabaseSchema;
import io.chatintake.store.EmbeddedDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/** One-line SQL for test assertions. */
public final class Sql {
    private Sql() {
    }

    /** A data source that finds the tables where a runner keeps them (schema {@code chat_intake}, the default). */
    public static DataSource dataSource(String jdbcUrl, String user, Secret password) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(jdbcUrl);
        ds.setUser(user);
        ds.setPassword(password.reveal());
        ds.setCurrentSchema(DatabaseSchema.DEFAULT);
        return ds;
    }

    /** The same on an embedded database a test started. */
    public static DataSource dataSource(EmbeddedDatabase database) {
        return dataSource(database.jdbcUrl(), database.user(), database.password());
    }

    /** The first column of the first row as a number; 0 when there is no row. */
    public static long count(DataSource db, String sql) {
        String value = string(db, sql);
        return value == null ? 0 : Long.parseLong(value);
    }

    public static String string(DataSource db, String sql) {
        try (Connection c = db.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        } catch (Exception e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }

    /** Every row, each as its columns' values; numbers as {@code Long}, so {@code List.of("a", 2L)} matches a row. */
    public static List<List<Object>> rows(DataSource db, String sql) {
        try (Connection c = db.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            List<List<Object>> rows = new ArrayList<>();
            while (rs.next()) {
                List<Object> row = new ArrayList<>();
                for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                    Object value = rs.getObject(i);
                    row.add(value instanceof Number n ? (Object) n.longValue() : value);
                }
                rows.add(row);
            }
            return rows;
        } catch (Exception e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }

    public static void execute(DataSource db, String sql) {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (Exception e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }

    /** The planner's plan for a query, one line per node: to check that a query reads an index, not the whole table. */
    public static String plan(DataSource db, String sql) {
        try (Connection c = db.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("EXPLAIN " + sql)) {
            StringBuilder plan = new StringBuilder();
            while (rs.next()) {
                plan.append(rs.getString(1)).append('\n');
            }
            return plan.toString();
        } catch (Exception e) {
            throw new IllegalStateException(sql + ": " + e.getMessage(), e);
        }
    }
}
