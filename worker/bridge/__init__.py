"""The bridge: identifier values in the warehouse and the sections that mention them."""
