package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

/** Sessions and CSRF tokens signed with a key derived from the status token: what verifies, what does not. */
class StatusSessionTest {
    private static final Secret TOKEN = Secret.of("status-token-SECRET-session");
    private final Clock now = Clock.fixed(Instant.parse("2026-12-06T10:00:00Z"), ZoneOffset.UTC);
    private final StatusSession sessions = new StatusSession(TOKEN, now);

    @Test
    void aSessionVerifiesUntilItExpiresAndNoAlteredOrForeignOneDoes() {
        String cookie = sessions.open();
        String session = sessions.verify(cookie).orElseThrow();
        assertThat(cookie).startsWith(session + ".").doesNotContain(TOKEN.reveal());

        char last = cookie.charAt(cookie.length() - 1);
        assertThat(sessions.verify(cookie.substring(0, cookie.length() - 1) + (last == '0' ? '1' : '0'))).isEmpty();
        String[] parts = cookie.split("\\.");
        assertThat(sessions.verify(parts[0] + "." + (Long.parseLong(parts[1]) + 3600) + "." + parts[2])).as("a longer life").isEmpty();
        assertThat(new StatusSession(Secret.of("another-token"), now).verify(cookie)).as("another deployment's").isEmpty();
        assertThat(sessions.verify("garbage")).isEmpty();
        assertThat(sessions.verify(null)).isEmpty();
        Clock later = Clock.offset(now, StatusSession.LIFETIME.plus(Duration.ofSeconds(1)));
        assertThat(new StatusSession(TOKEN, later).verify(cookie)).as("expired").isEmpty();
    }

    @Test
    void eachSessionHasItsOwnCsrfToken() {
        String one = sessions.verify(sessions.open()).orElseThrow();
        String two = sessions.verify(sessions.open()).orElseThrow();
        assertThat(sessions.csrfMatches(one, sessions.csrf(one))).isTrue();
        assertThat(sessions.csrfMatches(one, sessions.csrf(two))).isFalse();
        assertThat(sessions.csrfMatches(one, null)).isFalse();
        assertThat(sessions.csrf(one)).doesNotContain(TOKEN.reveal()).hasSize(64);
    }

    @Test
    void cookiesAreHttpOnlyStrictAndTheNameComesBackAsTyped() {
        assertThat(StatusSession.sessionCookie("v", false)).contains("HttpOnly").contains("SameSite=Strict").contains("Path=/status")
                .doesNotContain("Secure");
        assertThat(StatusSession.sessionCookie("v", true)).endsWith("; Secure");
        assertThat(StatusSession.endedSessionCookie(false)).startsWith(StatusSession.COOKIE + "=;").contains("Max-Age=0");
        String set = StatusSession.operatorCookie("Zoë O'Call; x=1", false);
        String sent = set.substring(0, set.indexOf(';'));
        assertThat(StatusSession.cookie("a=b; " + sent, StatusSession.OPERATOR_COOKIE)).isEqualTo("Zoë O'Call; x=1");
        assertThat(StatusSession.cookie(StatusSession.OPERATOR_COOKIE + "=%zz", StatusSession.OPERATOR_COOKIE)).isEmpty();
        assertThat(StatusSession.cleanName(" a\nb ")).isEqualTo("a b");
    }
}
