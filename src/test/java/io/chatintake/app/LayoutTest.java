package io.chatintake.app;

import static com.tngtech.archunit.base.DescribedPredicate.describe;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The layout the architecture promises, checked on the main classes: dependencies point down
 * app -> ops -> channel.* -> message/album/attachment -> work/store/config/support, no package
 * cycle, channels never import each other (each may use the generic channel.webhook intake, which
 * imports none of them), and the simulators are used only by ops (bench, demo) and app.
 */
class LayoutTest {
    private static final String BASE = "io.chatintake.";
    private static final JavaClasses MAIN = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.chatintake");

    @Test
    void dependenciesPointDownTheLayers() {
        layeredArchitecture().consideringOnlyDependenciesInLayers()
                .layer("app").definedBy(BASE + "app..")
                .layer("ops").definedBy(BASE + "ops..")
                .layer("channels").definedBy(BASE + "channel..")
                .layer("messages, albums, attachments").definedBy(BASE + "message..", BASE + "album..", BASE + "attachment..", BASE + "content..")
                .layer("work, store, config, support").definedBy(BASE + "work..", BASE + "store..", BASE + "config..", BASE + "support..")
                .layer("simulators").definedBy(BASE + "sim..")
                .whereLayer("app").mayNotBeAccessedByAnyLayer()
                .whereLayer("ops").mayOnlyBeAccessedByLayers("app")
                .whereLayer("channels").mayOnlyBeAccessedByLayers("app", "ops", "simulators") // the signed-delivery sender signs with the verifier's scheme
                .whereLayer("messages, albums, attachments").mayOnlyBeAccessedByLayers("app", "ops", "channels")
                .whereLayer("work, store, config, support").mayOnlyBeAccessedByLayers("app", "ops", "channels", "messages, albums, attachments", "simulators")
                .whereLayer("simulators").mayOnlyBeAccessedByLayers("app", "ops")
                .check(MAIN);
    }

    @Test
    void noPackageCycles() {
        slices().matching(BASE + "(**)").should().beFreeOfCycles()
                .check(MAIN);
    }

    /** The work engine's parts (one job a class, db-scheduler's way) live in work/ and use each other one way. */
    @Test
    void theWorkEnginesPartsStayInWorkWithoutCyclesBetweenThem() {
        Set<String> parts = Set.of("WorkDispatcher", "WorkQueue", "RunResults", "DeferReason", "EffectGuard", "EffectFailure",
                "RunnerHeartbeat", "Retention", "StagedWorkScheduler", "Gathering", "Backoff", "WorkMetrics",
                "RunUntilShutdown", "ClaimDueWork", "ClaimedRuns", "ExecutePicked", "RecordRunResults", "ClaimKeeper", "IntakePacing",
                "WorkerWakeups", "HandlerSources", "WorkItemRepository", "WorkLanes", "LaneClaims", "FinishRuns", "ItemState", "Outcome");
        classes().that(describe("the work engine's parts", c -> c.isTopLevelClass() && parts.contains(c.getSimpleName())))
                .should().resideInAPackage(BASE + "work")
                .check(MAIN);
        slices().assignedFrom(new SliceAssignment() {
                    @Override
                    public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
                        if (!javaClass.getPackageName().equals(BASE + "work")) {
                            return SliceIdentifier.ignore();
                        }
                        String name = javaClass.getName().substring((BASE + "work.").length());
                        return SliceIdentifier.of(name.contains("$") ? name.substring(0, name.indexOf('$')) : name);
                    }

                    @Override
                    public String getDescription() {
                        return "the top-level classes of work/";
                    }
                }).should().beFreeOfCycles()
                .check(MAIN);
    }

    /**
     * {@code WorkItemRepository} is the only writer of {@code work_item}: no other main source file
     * holds a statement that inserts, updates or deletes its rows (retention and scheduling compose
     * the repository's fragments). Read from the sources, where SQL text lives.
     */
    @Test
    void onlyTheRepositoryWritesWorkItems() throws IOException {
        Pattern writes = Pattern.compile("(INSERT\\s+INTO|UPDATE|DELETE\\s+FROM)\\s+work_item\\b", Pattern.CASE_INSENSITIVE);
        Path repository = Path.of("src/main/java/io/chatintake/work/WorkItemRepository.java");
        assertThat(writes.matcher(Files.readString(repository)).results().count()).as("the repository's own statements").isGreaterThan(5);
        try (Stream<Path> sources = Files.walk(Path.of("src/main/java"))) {
            List<String> writers = sources.filter(p -> p.toString().endsWith(".java") && !p.equals(repository))
                    .filter(p -> writes.matcher(read(p)).find())
                    .map(Path::toString).toList();
            assertThat(writers).as("main sources with SQL that writes work_item").isEmpty();
        }
    }

    /**
     * The channels' own tables and columns ({@code telegram_update}, {@code webhook_event_purged},
     * {@code telegram_file_id}, ...) and their provider names, as code, SQL or a comment would
     * name them. Prose names the platforms capitalised ("Telegram"), which stays allowed; "line"
     * counts only quoted or as a kind ({@code line-event}), as a provider is written.
     */
    private static final Pattern CHANNEL_NAMES = Pattern.compile(
            "\\b(?:telegram|webhook)_\\w+|(?<![\\w-])(?:telegram|unifyport|slack|whatsapp|discord)(?!\\w)|['\"]line['\"]|(?<![\\w-])line-\\w");
    /** The layers below the channels: they take what a channel knows through interfaces they own. */
    private static final List<String> BELOW_THE_CHANNELS = List.of("work", "album", "attachment", "content", "message", "store");
    /** Files that still name a channel, each with why (migrations are exempt: they are the channels' schema). */
    private static final Map<String, String> STILL_NAMING_A_CHANNEL = Map.of(
            "io/chatintake/attachment/AttachmentStore.java",
            "message_attachment's columns telegram_bot_id and telegram_file_id (a migration to rename), and the"
                    + " telegram_checkpoint join that finds a file id's bot name",
            "io/chatintake/attachment/AttachmentFetcher.java",
            "files known by a file id are Telegram's: its source label and the missing telegram_checkpoint message",
            "io/chatintake/content/ContentRemoval.java",
            "message_attachment's column telegram_file_id, cleared with the attachment's other content",
            "io/chatintake/store/OperatorPause.java",
            "the operator_pause subject 'telegram-bot' (stored rows, read by routes/OperatorAlerts.java) of a bot's polling");

    @Test
    void theLayersBelowTheChannelsNameNoChannelTableOrProvider() {
        List<String> named = channelNamesIn(Path.of("src/main/java")).stream()
                .filter(hit -> !STILL_NAMING_A_CHANNEL.containsKey(hit.substring(0, hit.indexOf(':'))))
                .toList();
        assertThat(named).as("channel tables or providers named in " + BELOW_THE_CHANNELS).isEmpty();
        assertThat(STILL_NAMING_A_CHANNEL.keySet()).as("allowed files that exist and still name a channel")
                .allMatch(file -> channelNamesIn(Path.of("src/main/java")).stream().anyMatch(hit -> hit.startsWith(file + ":")));
    }

    @Test
    void theChannelScanFindsAChannelTableNamedInWork() {
        assertThat(channelNamesIn(Path.of("src/test/resources/layout-fixture")))
                .containsExactly("io/chatintake/work/Fixture.java.txt:7: telegram_update",
                        "io/chatintake/work/Fixture.java.txt:10: unifyport");
    }

    /** Each name of a channel table or provider in the sources of the layers below the channels: "file:line: name". */
    static List<String> channelNamesIn(Path root) {
        List<String> hits = new ArrayList<>();
        for (String layer : BELOW_THE_CHANNELS) {
            Path dir = root.resolve("io/chatintake").resolve(layer);
            if (!Files.isDirectory(dir)) {
                continue;
            }
            try (Stream<Path> files = Files.walk(dir)) {
                files.filter(f -> f.toString().endsWith(".java") || f.toString().endsWith(".java.txt")).sorted().forEach(file -> {
                    String[] lines = read(file).split("\n", -1);
                    for (int i = 0; i < lines.length; i++) {
                        Matcher m = CHANNEL_NAMES.matcher(lines[i]);
                        while (m.find()) {
                            hits.add(root.relativize(file).toString().replace('\\', '/') + ":" + (i + 1) + ": " + m.group());
                        }
                    }
                });
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return hits;
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void channelsNeverImportEachOtherAndTheGenericWebhookIntakeImportsNone() {
        slices().matching(BASE + "channel.(*)..").should().notDependOnEachOther()
                .ignoreDependency(describe("a channel", c -> c.getPackageName().startsWith(BASE + "channel.")),
                        describe("the generic webhook intake", c -> c.getPackageName().startsWith(BASE + "channel.webhook")))
                .check(MAIN);
    }
}
