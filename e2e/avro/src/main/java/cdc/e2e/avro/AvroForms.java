package cdc.e2e.avro;

import io.apicurio.registry.utils.converter.avro.AvroData;
import org.apache.avro.Schema;
import org.apache.avro.file.DataFileWriter;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.io.JsonEncoder;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads Debezium change events as Kafka Connect's JsonConverter wrote them (schemas.enable=true, one
 * value per line, {@code null} a tombstone), turns each back into its Connect record
 * ({@code JsonConverter.toConnectData}) and serialises that record the way an Avro converter does
 * ({@code AvroData.fromConnectSchema}/{@code fromConnectData}, Apicurio Registry's copy of Confluent's
 * AvroData). Writes, under OUT:
 * <ul>
 *   <li>{@code schemas/ID.avsc}: each distinct Avro schema, numbered 1, 2, … in order of first use (as a
 *       registry numbers them);</li>
 *   <li>{@code framed.bin}: Confluent wire-format messages (0, the id as 4 bytes, Avro binary), each after its
 *       length as 4 big-endian bytes ({@code -1}: a tombstone) — what {@code kcat -f '%R%s'} writes;</li>
 *   <li>{@code wire.bin}: the same messages, each followed by a newline ({@code kcat -D '\n'}; a tombstone
 *       writes nothing);</li>
 *   <li>{@code kcat.jsonl}: {@code kcat -J} records, the payload the message's bytes as kcat's yajl
 *       writes them (raw, control bytes escaped);</li>
 *   <li>{@code json.jsonl}: {@code kcat -J -s value=avro} records: the payload in Avro's JSON encoding
 *       ({@code JsonEncoder}) and its {@code value_schema_id};</li>
 *   <li>{@code container-NNNN.avro}: Avro container files ({@code DataFileWriter}), a new one at each change
 *       of schema, as Kafka Connect's S3 sink rotates them.</li>
 * </ul>
 */
public final class AvroForms {

    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            System.err.println("usage: AvroForms EVENTS.jsonl OUT");
            System.exit(2);
        }
        Path out = Path.of(args[1]);
        Files.createDirectories(out.resolve("schemas"));
        JsonConverter json = new JsonConverter();
        Map<String, Object> cfg = new HashMap<>();
        cfg.put("converter.type", "value");
        cfg.put("schemas.enable", "true");
        json.configure(cfg, false);
        AvroData avro = new AvroData(1000);
        Map<String, Integer> ids = new LinkedHashMap<>();
        DataFileWriter<Object> container = null;
        Schema containerSchema = null;
        int containers = 0;
        long offset = 0;
        try (BufferedReader in = Files.newBufferedReader(Path.of(args[0]), StandardCharsets.UTF_8);
             OutputStream framed = Files.newOutputStream(out.resolve("framed.bin"));
             OutputStream wire = Files.newOutputStream(out.resolve("wire.bin"));
             OutputStream kcat = Files.newOutputStream(out.resolve("kcat.jsonl"));
             OutputStream avroJson = Files.newOutputStream(out.resolve("json.jsonl"))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                byte[] head = ("{\"topic\":\"t\",\"partition\":0,\"offset\":" + offset++
                        + ",\"tstype\":\"create\",\"ts\":1,\"broker\":0,\"key\":null,\"payload\":").getBytes(StandardCharsets.UTF_8);
                SchemaAndValue record = line.strip().equals("null") ? SchemaAndValue.NULL
                        : json.toConnectData("t", line.getBytes(StandardCharsets.UTF_8));
                if (record.value() == null) {
                    framed.write(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff});
                    for (OutputStream o : new OutputStream[] {kcat, avroJson}) {
                        o.write(head);
                        o.write("null}\n".getBytes(StandardCharsets.UTF_8));
                    }
                    continue;
                }
                Schema schema = avro.fromConnectSchema(record.schema());
                Object datum = avro.fromConnectData(record.schema(), record.value());
                String text = schema.toString();
                Integer id = ids.get(text);
                if (id == null) {
                    id = ids.size() + 1;
                    ids.put(text, id);
                    Files.writeString(out.resolve("schemas").resolve(id + ".avsc"), text, StandardCharsets.UTF_8);
                }
                GenericDatumWriter<Object> writer = new GenericDatumWriter<>(schema);
                ByteArrayOutputStream message = new ByteArrayOutputStream();
                message.write(0);
                message.write(new byte[] {(byte) (id >>> 24), (byte) (id >>> 16), (byte) (id >>> 8), (byte) (int) id});
                BinaryEncoder binary = EncoderFactory.get().binaryEncoder(message, null);
                writer.write(datum, binary);
                binary.flush();
                byte[] bytes = message.toByteArray();
                int n = bytes.length;
                framed.write(new byte[] {(byte) (n >>> 24), (byte) (n >>> 16), (byte) (n >>> 8), (byte) n});
                framed.write(bytes);
                wire.write(bytes);
                wire.write('\n');
                kcat.write(head);
                kcat.write(yajlString(bytes));
                kcat.write("}\n".getBytes(StandardCharsets.UTF_8));
                ByteArrayOutputStream text2 = new ByteArrayOutputStream();
                JsonEncoder encoder = EncoderFactory.get().jsonEncoder(schema, text2);
                writer.write(datum, encoder);
                encoder.flush();
                avroJson.write(head);
                avroJson.write(text2.toByteArray());
                avroJson.write((",\"value_schema_id\":" + id + "}\n").getBytes(StandardCharsets.UTF_8));
                if (container == null || !schema.equals(containerSchema)) {
                    if (container != null) {
                        container.close();
                    }
                    containers++;
                    container = new DataFileWriter<>(new GenericDatumWriter<>(schema));
                    container.create(schema, out.resolve(String.format("container-%04d.avro", containers)).toFile());
                    containerSchema = schema;
                }
                container.append(datum);
            }
        } finally {
            if (container != null) {
                container.close();
            }
        }
        System.out.println(offset + " records, " + ids.size() + " schemas, " + containers + " container files");
    }

    /** A message's bytes as kcat's yajl writes a JSON string: raw, with '"', '\\' and control bytes escaped. */
    static byte[] yajlString(byte[] data) {
        ByteArrayOutputStream s = new ByteArrayOutputStream();
        s.write('"');
        for (byte b : data) {
            int c = b & 0xff;
            String shortEscape = switch (c) {
                case '"' -> "\\\"";
                case '\\' -> "\\\\";
                case '\b' -> "\\b";
                case '\f' -> "\\f";
                case '\n' -> "\\n";
                case '\r' -> "\\r";
                case '\t' -> "\\t";
                default -> null;
            };
            if (shortEscape != null) {  // yajl_string_encode's short escapes
                byte[] esc = shortEscape.getBytes(StandardCharsets.US_ASCII);
                s.write(esc, 0, esc.length);
            } else if (c < 0x20) {
                byte[] esc = String.format("\\u%04x", c).getBytes(StandardCharsets.US_ASCII);
                s.write(esc, 0, esc.length);
            } else {
                s.write(c);
            }
        }
        s.write('"');
        return s.toByteArray();
    }
}
