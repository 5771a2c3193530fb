package io.chatintake.config;

/**
 * A setting that cannot work. The message is shown to the operator as one line and
 * always names the setting (as its environment variable), so it must never hold a secret.
 */
public class ConfigurationException extends RuntimeException {
    public ConfigurationException(String message) {
        super(message);
    }

    public ConfigurationException(String message, Throwable cause) {
        super(message, cause);
    }
}
