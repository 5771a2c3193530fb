package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.config.ConfigurationException;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * An operator action and its {@code operator_action} row commit together, on a real PostgreSQL:
 * when the row cannot be written (here a trigger refuses it) the action is rolled back and the
 * CLI says it failed; when it can, both are there.
 */
@ExtendWith(TestDatabase.class)
class OperatorAuditTest {
    private final DataSource db = TestDatabase.dataSource();
    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8);

    @Test
    void anActionWhoseAuditRowIsRefusedIsRolledBackAndSaidToHaveFailed() {
        long item = seed();
        Sql.execute(db, """
                CREATE FUNCTION refuse_operator_action() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'operator_action refused by the test'; END $$;
                CREATE TRIGGER refuse_operator_action BEFORE INSERT ON operator_action
                    FOR EACH ROW EXECUTE FUNCTION refuse_operator_action()""");
        try {
            WorkCommands work = new WorkCommands(TestDatabase.commandSettings(), out);
            assertThatThrownBy(() -> work.run(List.of("retry", "--id", Long.toString(item), "--by", "bob")))
                    .isInstanceOf(ConfigurationException.class).hasMessageContaining("operator_action refused by the test");
            assertThatThrownBy(() -> work.run(List.of("resolve-effect", "e1", "--performed", "--by", "bob")))
                    .isInstanceOf(ConfigurationException.class).hasMessageContaining("operator_action refused by the test");
            OperatorActions actions = new OperatorActions(db);
            assertThatThrownBy(() -> actions.retryParked("crm", "bob")).isInstanceOf(SQLException.class);
            assertThatThrownBy(() -> actions.resolveAlbum("alb", "bob")).isInstanceOf(SQLException.class);
            assertThatThrownBy(() -> new AlbumCommands(TestDatabase.commandSettings(), out).resolve("alb", "bob"))
                    .isInstanceOf(ConfigurationException.class).hasMessageContaining("operator_action refused by the test");
        } finally {
            Sql.execute(db, "DROP TRIGGER refuse_operator_action ON operator_action; DROP FUNCTION refuse_operator_action()");
        }
        assertThat(printed.toString(StandardCharsets.UTF_8)).as("no sentence claims a change").doesNotContain("back to pending")
                .doesNotContain("resolved by");
        assertThat(Sql.string(db, "SELECT state FROM work_item WHERE id = " + item)).as("not retried").isEqualTo("parked");
        assertThat(Sql.string(db, "SELECT state FROM outbound_effect WHERE effect_key = 'e1'")).as("not settled").isEqualTo("started");
        assertThat(Sql.string(db, "SELECT needs_person::text FROM album WHERE album_key = 'alb'")).as("not resolved").isEqualTo("true");
        assertThat(Sql.count(db, "SELECT count(*) FROM operator_action")).isZero();
    }

    @Test
    void anActionAndItsAuditRowCommitTogether() throws Exception {
        long item = seed();

        assertThat(new WorkCommands(TestDatabase.commandSettings(), out).run(List.of("retry", "--id", Long.toString(item), "--by", "bob")))
                .isZero();
        OperatorActions.ActionResult settled = new OperatorActions(db).settleEffect("e1", true, "carol");

        assertThat(printed.toString(StandardCharsets.UTF_8)).contains("1 item(s) back to pending");
        assertThat(settled.changed()).isTrue();
        assertThat(Sql.string(db, "SELECT state FROM work_item WHERE id = " + item)).isEqualTo("pending");
        assertThat(Sql.string(db, "SELECT state FROM outbound_effect WHERE effect_key = 'e1'")).isEqualTo("done");
        assertThat(Sql.rows(db, "SELECT acted_by, action, target FROM operator_action ORDER BY id")).containsExactly(
                List.of("bob", "retry", "work item " + item), List.of("carol", "settle-effect", "effect e1"));
    }

    /** A parked item, an effect awaiting reconciliation on it, an album awaiting a person. */
    private long seed() {
        long item = Sql.count(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)"
                + " VALUES ('crm', 'crm:1', 1, 'parked', 8, 'boom') RETURNING id");
        Sql.execute(db, "INSERT INTO outbound_effect (effect_key, work_item_id, state) VALUES ('e1', " + item + ", 'started')");
        Sql.execute(db, """
                INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id, first_child_at, last_child_at,
                                   decided_version, decided_at, decide_after, needs_person)
                VALUES ('alb', 'default', 'p', 'a', 'c', 'alb', now(), now(), 1, now(), NULL, true)""");
        return item;
    }
}
