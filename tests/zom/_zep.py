"""The JSON examples of ZEP 6 ("Zarr Object Models in JSON"), copied verbatim
from ``specs/seeds/004_99ffb1416cc1c5c3.txt`` (layout included, so that the
round trip can be compared text for text)."""

ZEP_V3_GROUP = """{
  "zarr_format": 3,
  "node_type": "group",
  "attributes": {
    "foo": 42,
    "bar": false
  },
  "members": {
    "array": {
      "zarr_format": 3,
      "node_type": "array",
      "attributes": {
        "baz": [
          1,
          2,
          3
        ]
      },
      "shape": [
        1000,
        1000
      ],
      "data_type": "|u1",
      "chunk_grid": {
        "name": "regular",
        "configuration": {
          "chunk_shape": [
            1000,
            100
          ]
        }
      },
      "chunk_key_encoding": {
        "name": "default",
        "configuration": {
          "separator": "/"
        }
      },
      "fill_value": 0,
      "codecs": [
        {
          "name": "GZip",
          "configuration": {
            "level": 1
          }
        }
      ],
      "storage_transformers": null,
      "dimension_names": [
        "rows",
        "columns"
      ]
    }
  }
}"""

ZEP_V2_GROUP = """{
  "zarr_format" : 2,
  "attributes": {
    "foo" : 42, 
    "bar" : false
    },
  "members": {
    "foo": {
      "zarr_format" : 2,
      "shape" : [1000, 1000],
      "chunks": [100, 100],
      "dtype": "|u1",
      "compressor": null,
      "fill_value": 0,
      "order": "C",
      "dimension_separator":  "/",
      "filters": {},
      "attributes" : {
        "baz": true
        }
    }
  }
}"""
