package io.chatintake.store;

import io.chatintake.config.ConfigurationException;

/**
 * The database did not answer (refused, timed out, starting up): a command gives up with this
 * one line, as with any configuration error; a runner waits for the database instead.
 */
public final class DatabaseUnreachableException extends ConfigurationException {
    public DatabaseUnreachableException(String message, Throwable cause) {
        super(message, cause);
    }
}
