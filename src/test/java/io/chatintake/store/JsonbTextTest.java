package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Optional;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The scan must agree with PostgreSQL itself: every sample is also cast to jsonb by the real server. */
@ExtendWith(TestDatabase.class)
class JsonbTextTest {
    private static final String[] TAKEN = {
        "{\"t\":\"plain\"}",
        "{\"t\":\"a pair \\ud83d\\ude00 is fine\"}",
        "{\"t\":\"raw emoji \uD83D\uDE00 too\"}",
        "{\"t\":\"an escaped backslash then text: \\\\u0000\"}",
        "{\"t\":\"\\\\ud83d is text as well\"}",
        "{\"t\":\"control \\u0001 and \\u00e9\"}",
    };
    private static final String[] REFUSED_BOM = {
        "\uFEFF{\"t\":\"a UTF-8 byte-order mark, which Jackson skips\"}",
    };
    private static final String[] REFUSED_NUL = {
        "{\"t\":\"nul \\u0000 inside\"}",
        "{\"t\":\"\\\\\\u0000\"}",
    };
    private static final String[] REFUSED_SURROGATE = {
        "{\"t\":\"half \\ud83d\"}",
        "{\"t\":\"half at the end \\uD83D\"}",
        "{\"t\":\"low alone \\ude00\"}",
        "{\"t\":\"two highs \\ud83d\\ud83d\"}",
        "{\"t\":\"high then text \\ud83dx\"}",
    };

    @Test
    void theScanAgreesWithPostgresql(DataSource db) throws Exception {
        for (String json : TAKEN) {
            assertThat(JsonbText.refusal(json)).as(json).isEmpty();
            assertThat(postgresRefuses(db, json)).as(json).isFalse();
        }
        assertThat(JsonbText.refusal("{\"t\":\"\uFEFF inside a string\"}")).isEmpty();
        for (String json : REFUSED_BOM) {
            assertThat(JsonbText.refusal(json)).as(json).contains(JsonbText.BYTE_ORDER_MARK);
            assertThat(postgresRefuses(db, json)).as(json).isTrue();
        }
        for (String json : REFUSED_NUL) {
            assertThat(JsonbText.refusal(json)).as(json).contains(JsonbText.NUL_CHARACTER);
            assertThat(postgresRefuses(db, json)).as(json).isTrue();
        }
        for (String json : REFUSED_SURROGATE) {
            assertThat(JsonbText.refusal(json)).as(json).contains(JsonbText.LONE_SURROGATE);
            assertThat(postgresRefuses(db, json)).as(json).isTrue();
        }
    }

    @Test
    void bytesThatAreNotUtf8AreNotDecodedWithReplacements() {
        assertThat(JsonbText.utf8("{\"t\":\"é\"}".getBytes(StandardCharsets.UTF_8))).contains("{\"t\":\"é\"}");
        assertThat(JsonbText.utf8("{\"t\":1}".getBytes(StandardCharsets.UTF_16))).as("UTF-16 with its byte-order mark").isEmpty();
        assertThat(JsonbText.utf8(new byte[] {'{', '}', (byte) 0xC3})).as("cut in the middle of a character").isEmpty();
        // A raw NUL is UTF-8, but no PostgreSQL text holds it: UTF-16 without a byte-order mark is caught so.
        Optional<String> utf16le = JsonbText.utf8("{}".getBytes(StandardCharsets.UTF_16LE));
        assertThat(utf16le.flatMap(JsonbText::refusal)).contains(JsonbText.NUL_CHARACTER);
    }

    private static boolean postgresRefuses(DataSource db, String json) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT CAST(? AS jsonb)")) {
            ps.setString(1, json);
            ps.executeQuery().close();
            return false;
        } catch (SQLException e) {
            if (e.getSQLState().startsWith("22")) {
                return true;
            }
            throw e;
        }
    }
}
