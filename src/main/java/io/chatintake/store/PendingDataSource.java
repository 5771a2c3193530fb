package io.chatintake.store;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The runner's data source from its first moment, before its database has answered: every bean
 * is built with it, and each call fails as a database away would (SQL state 08001), until the pool
 * is there. What the beans already do while the database is away then holds before it came too.
 */
public final class PendingDataSource implements DataSource {
    private volatile DataSource pool;
    private volatile String reason = "not connected yet";

    /** From now on every call goes to this pool. */
    public void open(DataSource pool) {
        this.pool = pool;
    }

    /** Why there is no pool yet, for the failures until then. */
    public void waitingBecause(String reason) {
        this.reason = reason;
    }

    public boolean isOpen() {
        return pool != null;
    }

    private DataSource pool() throws SQLException {
        DataSource open = pool;
        if (open == null) {
            throw new SQLTransientConnectionException("the database has not answered since the start: " + reason, "08001");
        }
        return open;
    }

    @Override
    public Connection getConnection() throws SQLException {
        return pool().getConnection();
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        return pool().getConnection(username, password);
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
        return pool().getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
        pool().setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
        pool().setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
        return pool().getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> type) throws SQLException {
        return type.isInstance(this) ? type.cast(this) : pool().unwrap(type);
    }

    @Override
    public boolean isWrapperFor(Class<?> type) throws SQLException {
        return type.isInstance(this) || pool().isWrapperFor(type);
    }
}
