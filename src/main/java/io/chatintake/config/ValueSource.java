package io.chatintake.config;

/** Where an effective configuration value came from, as {@code config} shows it. */
public enum ValueSource {
    /** The jar's own {@code application.properties}: the one place a default is written. */
    BUILT_IN("built-in"),
    /** The configuration file ({@code config/application.properties} or {@code CHAT_INTAKE_CONFIG}). */
    FILE("config file"),
    /** An environment variable named after the key. */
    ENVIRONMENT("environment");

    private final String label;

    ValueSource(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }
}
