// Binary Kafka values in and out of a topic for the Avro check (avro_check.py): Confluent wire-format
// messages are bytes, which the console producer/consumer cannot carry. Run with the source launcher:
//   java -cp '.jars/kafka/*' KafkaBytes.java produce SERVERS TOPIC FRAMED_FILE
//   java -cp '.jars/kafka/*' KafkaBytes.java consume SERVERS TOPIC COUNT TIMEOUT_MS FRAMED_FILE
// FRAMED_FILE: each value after its length as 4 big-endian bytes (-1: a tombstone), as kcat -f '%R%s'.
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.time.Duration;
import java.util.List;
import java.util.Properties;

public class KafkaBytes {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[1]);
        if (args[0].equals("produce")) {
            p.put("key.serializer", ByteArraySerializer.class.getName());
            p.put("value.serializer", ByteArraySerializer.class.getName());
            int n = 0;
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
                 DataInputStream in = new DataInputStream(new FileInputStream(args[3]))) {
                while (true) {
                    int length;
                    try {
                        length = in.readInt();
                    } catch (EOFException end) {
                        break;
                    }
                    byte[] value = null;
                    if (length != -1) {
                        value = new byte[length];
                        in.readFully(value);
                    }
                    producer.send(new ProducerRecord<>(args[2], 0, null, value)).get();
                    n++;
                }
            }
            System.out.println(n + " messages produced");
        } else {
            p.put("key.deserializer", ByteArrayDeserializer.class.getName());
            p.put("value.deserializer", ByteArrayDeserializer.class.getName());
            p.put("enable.auto.commit", "false");
            int want = Integer.parseInt(args[3]);
            long deadline = System.currentTimeMillis() + Long.parseLong(args[4]);
            int n = 0;
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
                 DataOutputStream out = new DataOutputStream(new FileOutputStream(args[5]))) {
                TopicPartition partition = new TopicPartition(args[2], 0);
                consumer.assign(List.of(partition));
                consumer.seekToBeginning(List.of(partition));
                while (n < want && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                        byte[] v = r.value();
                        out.writeInt(v == null ? -1 : v.length);
                        if (v != null) {
                            out.write(v);
                        }
                        n++;
                    }
                }
            }
            System.out.println(n + " messages consumed");
        }
    }
}
