package cdc.e2e;

import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.debezium.embedded.Connect;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;

import java.io.BufferedWriter;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Runs one Debezium embedded engine per properties file given on the command line (all in this JVM)
 * and writes every change event value as Kafka Connect's JsonConverter serialises it: one line per
 * record, the record value only (no key). A tombstone (null value) is written as the line {@code null}.
 *
 * <p>Properties understood here (everything else goes to Debezium):
 * <ul>
 *   <li>{@code capture.out}: output directory; one file per table and converter setting,
 *       {@code <table>.<setting>.jsonl}.</li>
 *   <li>{@code capture.converters}: comma list of converter settings to write, each one of
 *       {@code schema} (schemas.enable=true, decimal.format=BASE64 — Kafka's defaults),
 *       {@code noschema} (schemas.enable=false), {@code numeric} (schemas.enable=true, decimal.format=NUMERIC).</li>
 *   <li>{@code capture.all}: {@code true} also writes every record of every topic — the tables', the
 *       transaction BEGIN/END records, heartbeats and schema changes — to one file per converter
 *       setting, {@code all.<setting>.jsonl}, as a single-topic router or an S3 sink would; and the
 *       same records as Kafka dumps people make: {@code all.kcat.jsonl} ({@code kcat -J}: one JSON
 *       object per message, key and payload as JSON text) and {@code all.console.txt}
 *       ({@code kafka-console-consumer --property print.key=true}: KEY, a tab, VALUE), both from the
 *       first converter setting.</li>
 *   <li>{@code capture.marker.table}: the table whose inserts are checkpoints: when a row of it
 *       arrives (snapshot or insert), all files are flushed and {@code checkpoints.jsonl} gets
 *       {@code {"n": N, "lines": {"file": count, ...}}} — the exact prefix of every file up to it.</li>
 * </ul>
 * The JVM stops when the file named by the system property {@code capture.stop} appears: every engine is
 * closed and every file flushed. An engine failure is written to {@code <out>/error.txt}.
 */
public final class Capture {

    static final class Sink {
        final Path out;
        final String markerTable;
        final Map<String, JsonConverter> converters = new LinkedHashMap<>();
        final Map<String, JsonConverter> keyConverters = new LinkedHashMap<>();
        final boolean all;
        long offset = 0;
        final Map<String, Writer> writers = new HashMap<>();
        final Map<String, Long> lines = new LinkedHashMap<>();
        final Writer checkpoints;

        Sink(Properties props) throws IOException {
            out = Path.of(props.getProperty("capture.out"));
            Files.createDirectories(out);
            markerTable = props.getProperty("capture.marker.table", "cdc_marker");
            all = Boolean.parseBoolean(props.getProperty("capture.all", "false"));
            for (String name : props.getProperty("capture.converters", "schema").split(",")) {
                name = name.trim();
                Map<String, Object> cfg = new HashMap<>();
                cfg.put("converter.type", "value");
                switch (name) {
                    case "schema" -> { cfg.put("schemas.enable", "true"); cfg.put("decimal.format", "BASE64"); }
                    case "noschema" -> { cfg.put("schemas.enable", "false"); cfg.put("decimal.format", "BASE64"); }
                    case "numeric" -> { cfg.put("schemas.enable", "true"); cfg.put("decimal.format", "NUMERIC"); }
                    default -> throw new IllegalArgumentException("unknown converter setting " + name);
                }
                JsonConverter converter = new JsonConverter();
                converter.configure(cfg, false);
                converters.put(name, converter);
                Map<String, Object> keyCfg = new HashMap<>(cfg);
                keyCfg.put("converter.type", "key");
                JsonConverter keyConverter = new JsonConverter();
                keyConverter.configure(keyCfg, true);
                keyConverters.put(name, keyConverter);
            }
            checkpoints = Files.newBufferedWriter(out.resolve("checkpoints.jsonl"), StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
        }

        /** prefix.schema.table (PostgreSQL) or prefix.db.table (MySQL/MariaDB) → table; null for other topics. */
        static String table(String topic) {
            String[] parts = topic.split("\\.");
            return parts.length == 3 ? parts[2] : null;
        }

        Writer writer(String file) throws IOException {
            Writer w = writers.get(file);
            if (w == null) {
                w = new BufferedWriter(Files.newBufferedWriter(out.resolve(file), StandardCharsets.UTF_8,
                        StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE), 1 << 16);
                writers.put(file, w);
                lines.put(file, 0L);
            }
            return w;
        }

        void line(String file, String text) throws IOException {
            Writer w = writer(file);
            w.write(text);
            w.write('\n');
            lines.merge(file, 1L, Long::sum);
        }

        static String jsonString(String text) {
            if (text == null) return "null";
            StringBuilder sb = new StringBuilder("\"");
            for (int i = 0; i < text.length(); i++) {
                char ch = text.charAt(i);
                switch (ch) {
                    case '"' -> sb.append("\\\"");
                    case '\\' -> sb.append("\\\\");
                    case '\n' -> sb.append("\\n");
                    case '\r' -> sb.append("\\r");
                    case '\t' -> sb.append("\\t");
                    default -> {
                        if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
                        else sb.append(ch);
                    }
                }
            }
            return sb.append('"').toString();
        }

        void writeAll(SourceRecord record) throws IOException {
            boolean first = true;
            for (Map.Entry<String, JsonConverter> c : converters.entrySet()) {
                byte[] value = c.getValue().fromConnectData(record.topic(), record.valueSchema(), record.value());
                String v = value == null ? null : new String(value, StandardCharsets.UTF_8);
                line("all." + c.getKey() + ".jsonl", v == null ? "null" : v);
                if (first) {
                    first = false;
                    byte[] key = keyConverters.get(c.getKey()).fromConnectData(record.topic(), record.keySchema(), record.key());
                    String k = key == null ? null : new String(key, StandardCharsets.UTF_8);
                    long ts = record.timestamp() != null ? record.timestamp() : System.currentTimeMillis();
                    line("all.kcat.jsonl", "{\"topic\":" + jsonString(record.topic()) + ",\"partition\":0,\"offset\":" + offset
                            + ",\"tstype\":\"create\",\"ts\":" + ts + ",\"broker\":0,\"key\":" + jsonString(k)
                            + ",\"payload\":" + jsonString(v) + "}");
                    line("all.console.txt", (k == null ? "null" : k) + "\t" + (v == null ? "null" : v));
                    offset++;
                }
            }
        }

        synchronized void write(SourceRecord record) throws IOException {
            if (all) {
                writeAll(record);
            }
            String table = table(record.topic());
            if (table == null) {
                return; // schema-change, heartbeat or transaction topics: not table changes
            }
            for (Map.Entry<String, JsonConverter> c : converters.entrySet()) {
                byte[] value = c.getValue().fromConnectData(record.topic(), record.valueSchema(), record.value());
                line(table + "." + c.getKey() + ".jsonl", value == null ? "null" : new String(value, StandardCharsets.UTF_8));
            }
            if (table.equals(markerTable) && record.value() instanceof Struct v) {
                // an envelope's after image, or the row itself once ExtractNewRecordState flattened it
                Struct after = v.schema().field("after") != null ? v.getStruct("after")
                        : v.schema().field("n") != null ? v : null;
                if (after != null) {
                    checkpoint(((Number) after.get("n")).longValue());
                }
            }
        }

        void checkpoint(long n) throws IOException {
            flush();
            StringBuilder sb = new StringBuilder("{\"n\": ").append(n).append(", \"lines\": {");
            boolean first = true;
            for (Map.Entry<String, Long> e : lines.entrySet()) {
                if (!first) sb.append(", ");
                first = false;
                sb.append('"').append(e.getKey()).append("\": ").append(e.getValue());
            }
            sb.append("}}\n");
            checkpoints.write(sb.toString());
            checkpoints.flush();
        }

        synchronized void flush() throws IOException {
            for (Writer w : writers.values()) {
                w.flush();
            }
        }

        synchronized void close() throws IOException {
            flush();
            for (Writer w : writers.values()) {
                w.close();
            }
            checkpoints.close();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println("usage: Capture ENGINE.properties...");
            System.exit(2);
        }
        Path stop = Path.of(System.getProperty("capture.stop", "capture.stop"));
        List<DebeziumEngine<RecordChangeEvent<SourceRecord>>> engines = new ArrayList<>();
        List<Sink> sinks = new ArrayList<>();
        ExecutorService executor = Executors.newFixedThreadPool(args.length);
        for (String file : args) {
            Properties props = new Properties();
            try (var in = new InputStreamReader(new FileInputStream(file), StandardCharsets.UTF_8)) {
                props.load(in);
            }
            Sink sink = new Sink(props);
            sinks.add(sink);
            Properties debezium = new Properties();
            for (String name : props.stringPropertyNames()) {
                if (!name.startsWith("capture.")) {
                    debezium.setProperty(name, props.getProperty(name));
                }
            }
            DebeziumEngine<RecordChangeEvent<SourceRecord>> engine = DebeziumEngine
                    .create(ChangeEventFormat.of(Connect.class))
                    .using(debezium)
                    .notifying((List<RecordChangeEvent<SourceRecord>> records,
                                DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer) -> {
                        try {
                            for (RecordChangeEvent<SourceRecord> r : records) {
                                sink.write(r.record());
                                committer.markProcessed(r);
                            }
                            sink.flush();
                        } catch (IOException e) {
                            throw new RuntimeException(e);
                        }
                        committer.markBatchFinished();
                    })
                    .using((success, message, error) -> {
                        if (!success) {
                            try {
                                String text = message + (error != null ? "\n" + error : "") + "\n";
                                Files.writeString(sink.out.resolve("error.txt"), text, StandardCharsets.UTF_8);
                            } catch (IOException e) {
                                e.printStackTrace();
                            }
                        }
                    })
                    .build();
            engines.add(engine);
            executor.execute(engine);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> closeAll(engines, sinks, executor)));
        while (!Files.exists(stop)) {
            Thread.sleep(100);
        }
        closeAll(engines, sinks, executor);
        System.exit(0);
    }

    private static boolean closed = false;

    static synchronized void closeAll(List<DebeziumEngine<RecordChangeEvent<SourceRecord>>> engines, List<Sink> sinks,
                                      ExecutorService executor) {
        if (closed) return;
        closed = true;
        for (DebeziumEngine<RecordChangeEvent<SourceRecord>> e : engines) {
            try {
                e.close();
            } catch (Exception ex) {
                ex.printStackTrace();
            }
        }
        executor.shutdown();
        try {
            executor.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException ignored) {
            Thread.currentThread().interrupt();
        }
        for (Sink s : sinks) {
            try {
                s.close();
            } catch (IOException ex) {
                ex.printStackTrace();
            }
        }
    }
}
