package io.chatintake.testkit;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A real database whose answer to a commit can be lost, as when the link or the server dies
 * between committing and answering: the transaction is committed, yet its caller sees the
 * connection fail (SQLState 08006) and cannot tell. Armed for the next commits of transactions
 * that ran a statement containing a given text; every other call goes to the real connection.
 */
public final class LostCommitAnswers implements DataSource {
    private final DataSource real;
    private final AtomicInteger armed = new AtomicInteger();
    private volatile String marker = "";

    public LostCommitAnswers(DataSource real) {
        this.real = real;
    }

    /** The next {@code count} commits of transactions that prepared a statement containing {@code sql} lose their answer. */
    public void loseNext(int count, String sql) {
        marker = sql;
        armed.set(count);
    }

    /** How many armed commits are still to come. */
    public int armed() {
        return armed.get();
    }

    @Override
    public Connection getConnection() throws SQLException {
        return answerLosing(real.getConnection());
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
        return answerLosing(real.getConnection(user, password));
    }

    private Connection answerLosing(Connection connection) {
        boolean[] marked = {false};
        InvocationHandler handler = (proxy, method, args) -> {
            String name = method.getName();
            if (name.startsWith("prepare") && args != null && args[0] instanceof String sql && !marker.isEmpty() && sql.contains(marker)) {
                marked[0] = true;
            }
            boolean lose = name.equals("commit") && marked[0] && armed.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
            if (name.equals("commit") || name.equals("rollback") || name.equals("close")) {
                marked[0] = false;
            }
            try {
                Object result = method.invoke(connection, args);
                if (lose) {
                    throw new SQLException("An I/O error occurred while sending to the backend (test: commit answer lost)", "08006");
                }
                return result;
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, handler);
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
        return real.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
        real.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
        real.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
        return real.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() {
        return Logger.getGlobal();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
        return real.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
        return false;
    }
}
